#include "rpc/file_uri.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>

namespace uexec::rpc {

std::string file_uri(const std::string& path) {
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || (c != 0 && std::strchr("/-._~", c)))
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// A file:// URI (percent-decoded) or an absolute path; nullopt otherwise.
std::optional<std::string> path_from_uri(const std::string& s) {
  if (!s.empty() && s[0] == '/') return s;
  if (s.rfind("file://", 0) != 0) return std::nullopt;
  std::string rest = s.substr(7);
  if (rest.rfind("localhost/", 0) == 0) rest = rest.substr(9);
  if (rest.empty() || rest[0] != '/') return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && std::isxdigit(static_cast<unsigned char>(rest[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(rest[i + 2]))) {
      out += static_cast<char>(std::stoi(rest.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += rest[i];
    }
  }
  return out;
}

}  // namespace uexec::rpc
