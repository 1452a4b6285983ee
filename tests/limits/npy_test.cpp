// tools::read_npy on good and malformed files (issue 10 item 4): every bad file is a typed error
// naming the argument, never an exception, a wrap or a huge allocation.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/npy.h"

namespace {

using namespace rudnn;
namespace fs = std::filesystem;

// A .npy file: magic, version, little-endian header length, header padded to 64 bytes with '\n'.
std::string npy(const std::string& header, const std::string& data = {}, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string h = header;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t b = 0; b < prefix - 8; ++b) out += static_cast<char>((h.size() >> (8 * b)) & 0xff);
  return out + h + data;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

template <class T>
std::string raw(std::initializer_list<T> values) {
  std::string s;
  for (T v : values) s.append(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rudnn_npy_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& bytes) {
    const std::string path = (dir_ / ("f" + std::to_string(n_++) + ".npy")).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // The error of reading `bytes` as `dtype` for "--input x": it must name the argument.
  Error error_of(const std::string& bytes, DType dtype = DType::F32) {
    const std::string path = write(bytes);
    auto r = tools::read_npy(path, dtype, "--input x=" + path);
    EXPECT_FALSE(r.ok()) << "accepted";
    if (r.ok()) return Error(ErrorKind::Internal, "", "", "");
    EXPECT_NE(r.error().message().find("--input x=" + path), std::string::npos) << r.error().message();
    return r.error();
  }

  fs::path dir_;
  int n_ = 0;
};

TEST_F(NpyTest, ReadsWhatWriteNpyWrites) {
  const std::string path = (dir_ / "w.npy").string();
  const HostData data = HostData::from_f64({2, 3}, DType::F32, std::vector<double>{1, 2, 3, 4, 5, -6.5});
  ASSERT_TRUE(tools::write_npy(path, data).ok());
  auto r = tools::read_npy(path, DType::F32);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->shape, (Shape{2, 3}));
  EXPECT_EQ(r->to_f64(), data.to_f64());
}

TEST_F(NpyTest, AcceptsEveryFormNumPyWrites) {
  // Double quotes, no trailing comma, keys in another order, a 1-tuple, version 2.0 and 3.0.
  auto a = tools::read_npy(write(npy("{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i8\"}",
                                     raw<std::int64_t>({-1, 0, 9223372036854775807}))),
                           DType::I64);
  ASSERT_TRUE(a.ok()) << a.error().message();
  std::int64_t last;
  std::memcpy(&last, a->bytes.data() + 16, 8);
  EXPECT_EQ(last, 9223372036854775807);  // exact: integers never pass through double
  for (int major : {2, 3}) {
    auto b = tools::read_npy(write(npy(dict("<f4", "(2, 1)"), raw<float>({1.5f, 2}), major)), DType::F32);
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_EQ(b->to_f64(), (std::vector<double>{1.5, 2}));
  }
  auto c = tools::read_npy(write(npy(dict("|b1", "(3,)"), std::string("\x00\x01\x07", 3))), DType::U8);
  ASSERT_TRUE(c.ok()) << c.error().message();
  EXPECT_EQ(c->to_f64(), (std::vector<double>{0, 1, 1}));
  auto d = tools::read_npy(write(npy(dict("<f8", "()"), raw<double>({4.25}))), DType::F32);  // a scalar
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->to_f64(), (std::vector<double>{4.25}));
  auto e = tools::read_npy(write(npy(dict("<u2", "(0, 64)"))), DType::F32);  // no elements, no data
  ASSERT_TRUE(e.ok()) << e.error().message();
  EXPECT_EQ(e->shape, (Shape{0, 64}));
}

// The reproducers.
TEST_F(NpyTest, ExtentPastInt64IsAnError) {
  const Error e = error_of(npy(dict("<f4", "(99999999999999999999, 64)")));
  EXPECT_EQ(e.kind(), ErrorKind::InvalidValue);
  EXPECT_NE(e.message().find("int64"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("99999999999999999999"), std::string::npos) << e.message();
}

TEST_F(NpyTest, HugeDescrWidthIsAnError) {
  const Error e = error_of(npy(dict("<f99999999999", "(2,)"), raw<float>({1, 2})));
  EXPECT_EQ(e.kind(), ErrorKind::UnsupportedDType);
  EXPECT_NE(e.message().find("<f99999999999"), std::string::npos) << e.message();
}

TEST_F(NpyTest, DirectoryAndDeviceAreErrorsNotReads) {
  for (const std::string path : {dir_.string(), std::string("/dev/zero")}) {
    auto r = tools::read_npy(path, DType::F32, "--input x=" + path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind(), ErrorKind::IoFailure);
    EXPECT_NE(r.error().message().find("--input x=" + path + ": expected a regular .npy file"), std::string::npos)
        << r.error().message();
  }
  auto missing = tools::read_npy((dir_ / "missing.npy").string(), DType::F32);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind(), ErrorKind::IoFailure);
}

TEST_F(NpyTest, MalformedShapesAreErrors) {
  // Each was read as something else before: (-2, 64) as (2, 64), ('2', 4096) as (2, 4096), ...
  for (const std::string shape : {"(-2, 64)", "('2', 4096)", "(3, 64,,)", "(5)", "(2 3)", "(,)", "(07, 2)", "(2, 3",
                                  "[2, 3]", "(2.0, 3)", "(0x10,)"}) {
    const Error e = error_of(npy(dict("<f4", shape), std::string(4 * 6, '\0')));
    EXPECT_EQ(e.kind(), ErrorKind::InvalidValue) << shape;
    EXPECT_NE(e.message().find("'shape'"), std::string::npos) << shape << ": " << e.message();
  }
}

TEST_F(NpyTest, FortranOrderMustBeABool) {
  const Error one = error_of(npy(dict("<f4", "(2,)", "1"), raw<float>({1, 2})));
  EXPECT_EQ(one.kind(), ErrorKind::InvalidValue);
  EXPECT_NE(one.message().find("True or False"), std::string::npos) << one.message();
  const Error fortran = error_of(npy(dict("<f4", "(2, 2)", "True"), std::string(16, '\0')));
  EXPECT_NE(fortran.message().find("C order"), std::string::npos) << fortran.message();
  error_of(npy(dict("<f4", "(2,)", "Truex"), raw<float>({1, 2})));
}

TEST_F(NpyTest, HeaderMustBeExactlyTheDict) {
  const std::string data = raw<float>({1, 2});
  for (const std::string header :
       {"{'descr': '<f4', 'fortran_order': False}",                                 // no shape
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}",      // unknown key
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",  // duplicate
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",                // trailing text
        "{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}",                   // no comma
        "{'descr': '<\\f4', 'fortran_order': False, 'shape': (2,)}",                // an escape
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",         // structured
        "{'descr: '<f4', 'fortran_order': False, 'shape': (2,)}", "", "{", "{,}"}) {
    const Error e = error_of(npy(header, data));
    EXPECT_EQ(e.kind(), ErrorKind::InvalidValue) << header << ": " << e.message();
  }
}

TEST_F(NpyTest, OnlyLittleEndianKnownItemTypes) {
  for (const std::string descr : {">f4", "|f4", "<c8", "<f16", "<b1x", "f", "<U4", "<M8", "<b2", "<i3", ""}) {
    const Error e = error_of(npy(dict(descr, "(2,)"), std::string(16, '\0')));
    EXPECT_EQ(e.kind(), ErrorKind::UnsupportedDType) << descr << ": " << e.message();
  }
  for (const std::string descr : {"|u1", ">u1", "=f4", "f4", "<u2"}) {
    const std::string width = descr.substr(descr.size() - 1);
    auto r = tools::read_npy(write(npy(dict(descr, "(2,)"), std::string(2 * std::stoul(width), '\0'))), DType::F32);
    EXPECT_TRUE(r.ok()) << descr << ": " << r.error().message();
  }
}

TEST_F(NpyTest, ElementCountPastInt64IsAnError) {
  const Error e = error_of(npy(dict("<f4", "(4503599627370496, 4096)")));
  EXPECT_EQ(e.kind(), ErrorKind::InvalidValue);
  EXPECT_NE(e.message().find("element count"), std::string::npos) << e.message();
  EXPECT_NE(e.message().find("(4503599627370496, 4096)"), std::string::npos) << e.message();
}

TEST_F(NpyTest, HugeConsistentHeaderWithoutDataIsTruncatedNotAnAllocation) {
  // 4e15 f4 elements (16 PB): the file must hold them before anything is allocated.
  const Error e = error_of(npy(dict("<f4", "(1000000000000, 4096)"), raw<float>({1, 2})));
  EXPECT_EQ(e.kind(), ErrorKind::IoFailure);
  EXPECT_NE(e.message().find("truncated"), std::string::npos) << e.message();
}

TEST_F(NpyTest, DataMustBeExactlyTheShape) {
  const Error short_data = error_of(npy(dict("<f4", "(2, 3)"), std::string(4 * 6 - 1, '\0')));
  EXPECT_EQ(short_data.kind(), ErrorKind::IoFailure);
  EXPECT_NE(short_data.message().find("truncated"), std::string::npos) << short_data.message();
  const Error extra = error_of(npy(dict("<f4", "(2, 3)"), std::string(4 * 6 + 1, '\0')));
  EXPECT_EQ(extra.kind(), ErrorKind::InvalidValue);
  EXPECT_NE(extra.message().find("24 bytes of data"), std::string::npos) << extra.message();
}

TEST_F(NpyTest, PrefixErrors) {
  std::string bad_magic = npy(dict("<f4", "(1,)"), raw<float>({1}));
  bad_magic[1] = 'X';
  EXPECT_EQ(error_of(bad_magic).kind(), ErrorKind::InvalidValue);
  std::string version = npy(dict("<f4", "(1,)"), raw<float>({1}));
  version[6] = 4;
  EXPECT_NE(error_of(version).message().find("version"), std::string::npos);
  EXPECT_EQ(error_of("\x93NUMPY\x01").kind(), ErrorKind::IoFailure);  // shorter than the prefix
  std::string long_header = npy(dict("<f4", "(1,)"), raw<float>({1}));
  long_header[8] = '\xff';
  long_header[9] = '\x7f';  // 32767 > the file
  EXPECT_NE(error_of(long_header).message().find("10000"), std::string::npos);
  std::string v2 = npy(dict("<f4", "(1,)"), raw<float>({1}), 2);
  v2[11] = '\x40';  // a 1 GiB header length in a 2.0 file
  EXPECT_EQ(error_of(v2).kind(), ErrorKind::InvalidValue);
}

TEST_F(NpyTest, IntegerArgumentsTakeOnlyValuesTheyHold) {
  const Error frac = error_of(npy(dict("<f4", "(2,)"), raw<float>({1, 1.5f})), DType::I32);
  EXPECT_EQ(frac.kind(), ErrorKind::InvalidValue);
  const Error range = error_of(npy(dict("<i8", "(1,)"), raw<std::int64_t>({std::int64_t{1} << 40})), DType::I32);
  EXPECT_EQ(range.kind(), ErrorKind::InvalidValue);
  const Error nan = error_of(npy(dict("<f8", "(1,)"), raw<double>({std::nan("")})), DType::U32);
  EXPECT_EQ(nan.kind(), ErrorKind::InvalidValue);
}

TEST_F(NpyTest, AllocationFailureIsOutOfMemoryNamingTheBytes) {
  // 2^55 one-byte items claimed by a stream: as f32 that is 2^57 bytes, more than any x86-64 or
  // AArch64 address space maps, so the allocation fails even where memory is overcommitted.
  const std::int64_t n = std::int64_t{1} << 55;
  std::istringstream in(npy(dict("|u1", "(" + std::to_string(n) + ",)")));
  const std::uint64_t size = in.str().size() + static_cast<std::uint64_t>(n);
  auto r = tools::read_npy(in, size, DType::F32, "--input big=x.npy");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::OutOfMemory);
  EXPECT_NE(r.error().message().find("--input big=x.npy"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find(std::to_string(std::uint64_t{1} << 57)), std::string::npos) << r.error().message();
}

TEST_F(NpyTest, FileThatEndsBeforeItsSizeIsTruncated) {
  // A file that shrinks after its size was taken: the data read comes up short.
  const std::string bytes = npy(dict("<f4", "(2,)"), raw<float>({1, 2}));
  std::istringstream in(bytes.substr(0, bytes.size() - 4));
  auto r = tools::read_npy(in, bytes.size(), DType::F32, "in");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::IoFailure);
  EXPECT_NE(r.error().message().find("ended early"), std::string::npos) << r.error().message();
}

}  // namespace
