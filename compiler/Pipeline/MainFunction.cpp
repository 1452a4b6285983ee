#include "rudnn/compiler/main_function.h"

#include "rudnn/Dialect/Rudnn/IR/RudnnDialect.h"
#include "rudnn/compiler/kernel_op_models.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <mlir/IR/Diagnostics.h>
#include <mlir/Parser/Parser.h>

namespace rudnn::compiler {

namespace {

RuntimeError too_large(const std::string& source_name, const std::string& actual) {
  return RuntimeError(ErrorKind::InvalidValue, source_name,
                      fmt::format("MLIR source of at most {} bytes ({} MiB)", kMaxSourceBytes, kMaxSourceBytes >> 20),
                      actual);
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a pipe";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Status<RuntimeError> check_source_limits(std::string_view text, const std::string& source_name) {
  if (text.size() > kMaxSourceBytes) return too_large(source_name, fmt::format("{} bytes", text.size()));
  // One pass, tracking only what MLIR's lexer would: string literals (with escapes) and // comments
  // hide brackets. For text that parses, each level counted is a level of the parser's recursion;
  // the '>' of '->' and '>=' are not closers, so nothing the parser accepts lowers the count.
  // Inside affine_map<...> / affine_set<...> the parser also recurses once per operator of an
  // expression (and the printer once per level of the expression tree), so there each + - * mod
  // floordiv ceildiv counts as a level, until the ',' that ends a list element.
  auto is_ident = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.';
  };
  int depth = 0;
  int affine_depth = 0;  // depth of the innermost affine_map/affine_set body; 0: outside one
  int affine_ops = 0;    // operators of the current affine list element
  bool affine_next = false;
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    if (c == '\n') {
      ++line;
      line_start = i + 1;
    } else if (c == '"') {
      for (++i; i < text.size() && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\') ++i;
      if (i < text.size() && text[i] == '\n') --i;  // an unterminated string: the next line counts
    } else if (c == '/' && next == '/') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      ++depth;
      if (c == '<' && affine_next && affine_depth == 0) {
        affine_depth = depth;
        affine_ops = 0;
      }
    } else if (c == ')' || c == ']' || c == '}' || (c == '>' && (i == 0 || text[i - 1] != '-') && next != '=')) {
      depth = depth > 0 ? depth - 1 : 0;  // unbalanced input is the parser's to report
      if (depth < affine_depth) affine_depth = 0;
    } else if (is_ident(c) && (i == 0 || !is_ident(text[i - 1]))) {
      std::size_t end = i;
      while (end < text.size() && is_ident(text[end])) ++end;
      const std::string_view word = text.substr(i, end - i);
      affine_next = word == "affine_map" || word == "affine_set";
      if (affine_depth && (word == "mod" || word == "floordiv" || word == "ceildiv")) ++affine_ops;
      i = end - 1;
    } else if (affine_depth && (c == '+' || c == '*' || (c == '-' && next != '>'))) {
      ++affine_ops;
    } else if (c == ',') {
      affine_ops = 0;
    }
    if (!is_ident(c) && c != ' ' && c != '\t' && c != '\n') affine_next = false;  // it lasts to the '<'
    if (depth + (affine_depth ? affine_ops : 0) > kMaxNestingDepth)
      return RuntimeError(
          ErrorKind::InvalidValue, source_name,
          fmt::format("MLIR nested at most {} deep (regions, brackets, affine operators)", kMaxNestingDepth),
          fmt::format("deeper nesting at line {}, column {}", line, i - line_start + 1));
  }
  return {};
}

Result<std::string, RuntimeError> read_source_file(const std::string& path) {
  const bool is_stdin = path == "-";
  const std::string name = is_stdin ? "<stdin>" : path;
  // O_NONBLOCK: opening a pipe must not wait for a writer before it is rejected.
  const int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return RuntimeError(ErrorKind::IoFailure, name, "a readable .mlir file", std::strerror(errno));
  struct Closer {
    int fd;
    bool owned;
    ~Closer() {
      if (owned) ::close(fd);
    }
  } closer{fd, !is_stdin};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return RuntimeError(ErrorKind::IoFailure, name, "a readable .mlir file", std::strerror(errno));
  if (!is_stdin && !S_ISREG(st.st_mode))
    return RuntimeError(ErrorKind::IoFailure, name, "a regular .mlir file", file_kind(st.st_mode));
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > kMaxSourceBytes)
    return too_large(name, fmt::format("{} bytes", st.st_size));
  if (!is_stdin) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  // Read at most one byte past the limit (standard input, or a file that grew since fstat).
  std::string text;
  char buf[1 << 16];
  while (text.size() <= kMaxSourceBytes) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return RuntimeError(ErrorKind::IoFailure, name, "a readable .mlir file", std::strerror(errno));
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  if (text.size() > kMaxSourceBytes) return too_large(name, "more bytes (read from a stream)");
  return text;
}

Result<MainFunction, RuntimeError> parse_main_function(const std::string& text, const std::string& source_name,
                                                       mlir::MLIRContext& context) {
  if (auto s = check_source_limits(text, source_name); !s.ok()) return s.error();
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  llvm::SourceMgr sm;
  sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, source_name), llvm::SMLoc());
  mlir::SourceMgrDiagnosticHandler handler(sm, &context, os);
  MainFunction out;
  out.module = mlir::parseSourceFile<mlir::ModuleOp>(sm, mlir::ParserConfig(&context));
  if (!out.module)
    return RuntimeError(ErrorKind::InvalidValue, source_name, "a valid module of rudnn ops", "errors", os.str());
  out.main = out.module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!out.main || out.main.isExternal())
    return RuntimeError(ErrorKind::InvalidValue, source_name, "a func.func @main with a body", "none");
  return out;
}

Result<MainFunction, RuntimeError> read_main_function(const std::string& path, mlir::MLIRContext& context) {
  auto text = read_source_file(path);
  if (!text.ok()) return text.error();
  return parse_main_function(text.value(), path, context);
}

void load_rudnn_dialects(mlir::MLIRContext& context) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, dialect::RudnnDialect>();
  registerKernelOpInterfaceModels(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

}  // namespace rudnn::compiler
