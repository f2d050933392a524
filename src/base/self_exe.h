// self_exe.h: the path of the binary this process runs, as /proc/self/exe names it.
//
// For starting this same binary again (the fs helper, an auto-started daemon, the holder's next
// daemon): the path as it was when read. A file replaced since (an upgrade) is then the new one.
#pragma once

#include <unistd.h>

#include <string>

namespace uexec::base {

// The path, or "" when /proc/self/exe cannot be read.
inline std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace uexec::base
