#pragma once
// librudnn.so is built with hidden visibility; the public API is exported explicitly.
#define RUDNN_API __attribute__((visibility("default")))
