#include "agent/probes.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>

namespace uexec::agent {

namespace {

// Inodes of LISTEN sockets on `port` (0: any), with their ports.
std::set<std::pair<unsigned long, int>> listen_inodes(int port) {
  std::set<std::pair<unsigned long, int>> out;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      char local[128], remote[128];
      unsigned st = 0;
      unsigned long inode = 0;
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (std::sscanf(line.c_str(), " %*s %127s %127s %x %*s %*s %*s %*s %*s %lu", local, remote, &st, &inode) != 4)
        continue;
      if (st != 0x0A) continue;  // TCP_LISTEN
      const char* colon = std::strrchr(local, ':');
      if (!colon) continue;
      int p = static_cast<int>(std::strtol(colon + 1, nullptr, 16));
      if (port == 0 || p == port) out.insert({inode, p});
    }
  }
  return out;
}

}  // namespace

std::optional<Listener> find_listener(pid_t sid, int port) {
  auto inodes = listen_inodes(port);
  if (inodes.empty()) return std::nullopt;
  DIR* d = ::opendir("/proc");
  if (!d) return std::nullopt;
  std::optional<Listener> found;
  while (!found) {
    dirent* e = ::readdir(d);
    if (!e) break;
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string base = std::string("/proc/") + e->d_name;
    std::ifstream statf(base + "/stat");
    std::string stat;
    std::getline(statf, stat);
    auto rp = stat.rfind(')');
    if (rp == std::string::npos) continue;
    char state;
    long ppid, pgrp, session;
    if (std::sscanf(stat.c_str() + rp + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &session) != 4) continue;
    if (session != sid) continue;
    DIR* fds = ::opendir((base + "/fd").c_str());
    if (!fds) continue;
    while (dirent* f = ::readdir(fds)) {
      if (f->d_name[0] == '.') continue;
      char target[64];
      ssize_t n = ::readlink((base + "/fd/" + f->d_name).c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      unsigned long ino = 0;
      if (std::sscanf(target, "socket:[%lu]", &ino) != 1) continue;
      for (const auto& [inode, p] : inodes) {
        if (inode != ino) continue;
        auto lp = stat.find('(');
        std::string comm = lp == std::string::npos ? "" : stat.substr(lp + 1, rp - lp - 1);
        found = Listener{p, static_cast<pid_t>(std::atol(e->d_name)), comm};
        break;
      }
      if (found) break;
    }
    ::closedir(fds);
  }
  ::closedir(d);
  return found;
}

std::string strip_ansi(std::string_view t) {
  std::string out;
  out.reserve(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '\r') continue;
    if (c != '\x1b') {
      out += c;
      continue;
    }
    if (i + 1 >= t.size()) break;
    char k = t[i + 1];
    if (k == '[') {  // CSI: parameters, then a final byte 0x40-0x7E
      std::size_t j = i + 2;
      while (j < t.size() && !(t[j] >= 0x40 && t[j] <= 0x7E)) ++j;
      i = j;
    } else if (k == ']') {  // OSC: until BEL or ST (ESC \)
      std::size_t j = i + 2;
      while (j < t.size() && t[j] != '\x07' && !(t[j] == '\x1b' && j + 1 < t.size() && t[j + 1] == '\\')) ++j;
      i = (j < t.size() && t[j] == '\x1b') ? j + 1 : j;
    } else {
      i += 1;  // a two-byte escape
    }
  }
  return out;
}

}  // namespace uexec::agent
