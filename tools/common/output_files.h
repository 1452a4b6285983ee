#pragma once
// A tool's output files, written all or nothing: every path is checked before any work runs, and
// the files are written next to their targets and renamed into place only once all of them are
// written, so a bad second path never leaves the first file behind and a failure leaves no
// temporary file.
#include <string>
#include <vector>

#include "rudnn/tensor.h"

namespace rudnn::tools {

struct OutputFile {
  std::string option;  // how the user named it, for errors: "--output y"
  std::string path;
};

// Before anything runs: every path names no directory, its directory exists (and is writable by
// this user), and no two outputs go to one file. The error names the output's option and path.
Status<RuntimeError> check_output_paths(const std::vector<OutputFile>& files);

// Writes data[i] as .npy to files[i].path, all or nothing: each file is first written into a
// private staging directory next to its target (same file system, so the rename is atomic), then
// all are renamed into place. On any failure every staging directory is removed, and so are
// outputs already renamed into place, so the error leaves no partial set.
Status<RuntimeError> write_npy_files(const std::vector<OutputFile>& files, const std::vector<const HostData*>& data);

}  // namespace rudnn::tools
