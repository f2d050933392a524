#include "web/listener_auth.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cctype>

#include "base/unique_fd.h"

namespace uexec::web {

using base::Error;
using base::Result;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool valid_port(std::string_view p) {
  return !p.empty() && p.size() <= 5 && p.find_first_not_of("0123456789") == std::string_view::npos &&
         std::stoi(std::string(p)) <= 65535;
}

}  // namespace

std::string subprotocol_problem(std::string_view value, std::string_view served) {
  // The limits of libwebsockets' lws_process_ws_upgrade: a 128-byte copy of the whole list
  // (one byte for the NUL), a 64-byte copy of each name.
  constexpr std::size_t kMaxList = 126, kMaxName = 63;
  if (value.find_first_not_of(" \t,") == std::string_view::npos) return {};
  if (value.size() > kMaxList)
    return fmt::format("the Sec-WebSocket-Protocol list is {} bytes, more than this server reads ({}); offer `{}` "
                       "first, or send the token as `Authorization: Bearer <token>`",
                       value.size(), kMaxList, served);
  std::size_t pos = 0;
  while (pos <= value.size()) {
    std::size_t comma = value.find(',', pos);
    std::string_view name = value.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    while (!name.empty() && (name.front() == ' ' || name.front() == '\t')) name.remove_prefix(1);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.remove_suffix(1);
    if (name == served) return {};
    if (name.size() > kMaxName)
      return fmt::format("an offered subprotocol is {} bytes, more than this server reads ({}); offer `{}` first",
                         name.size(), kMaxName, served);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return fmt::format("the WebSocket subprotocol `{}` was not offered; offer it (beside `uexec.auth.<token>`, "
                     "if that is how the token is sent)", served);
}

bool is_loopback_host(std::string_view host) {
  std::string h(host);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  h = lower(h);
  if (h == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  return false;
}

Result<std::string> parse_host_header(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return Error::invalid("no Host");
  std::string host;
  if (value.front() == '[') {
    auto close = value.find(']');
    if (close == std::string_view::npos) return Error::invalid("an unclosed [ in the Host");
    host = lower(value.substr(1, close - 1));
    std::string_view rest = value.substr(close + 1);
    if (!rest.empty() && (rest.front() != ':' || !valid_port(rest.substr(1))))
      return Error::invalid("a bad port in the Host");
    in6_addr v6{};
    if (::inet_pton(AF_INET6, host.c_str(), &v6) != 1) return Error::invalid("not an IPv6 address in [ ]");
    return host;
  }
  std::string_view name = value;
  if (auto colon = value.find(':'); colon != std::string_view::npos) {
    if (value.find(':', colon + 1) != std::string_view::npos)
      return Error::invalid("more than one : in the Host (an IPv6 address needs [ ])");
    if (!valid_port(value.substr(colon + 1))) return Error::invalid("a bad port in the Host");
    name = value.substr(0, colon);
  }
  host = lower(name);
  if (!host.empty() && host.back() == '.') host.pop_back();  // "localhost." is localhost
  if (host.empty()) return Error::invalid("an empty host name");
  for (char ch : host)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_')
      return Error::invalid("characters a host name cannot have");
  return host;
}

Result<std::string> parse_allowed_host(std::string_view host) {
  if (host == "*")
    return Error::invalid(
        "--allow-host * is not accepted: the Host check is what stops web pages from reaching this server under "
        "their own names (DNS rebinding), so each host must be named, e.g. --allow-host devbox.example");
  if (host.find("://") != std::string_view::npos || host.find('/') != std::string_view::npos)
    return Error::invalid("--allow-host " + std::string(host) + ": a host name or address (HOST or HOST:PORT), not a URL");
  auto h = parse_host_header(host);
  if (!h) return Error::invalid("--allow-host " + std::string(host) + ": " + h.error().context);
  return h;
}

bool host_allowed(std::string_view value, const std::vector<std::string>& allowed) {
  auto h = parse_host_header(value);
  if (!h) return false;
  if (is_loopback_host(*h)) return true;
  for (const auto& a : allowed)
    if (*h == a) return true;
  return false;
}

Result<std::string> read_token_file(const std::string& path) {
  base::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return Error::sys("--token-file: cannot open " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::sys("--token-file: cannot stat " + path);
  if (!S_ISREG(st.st_mode)) return Error::invalid("--token-file " + path + " is not a regular file");
  if (st.st_uid != ::geteuid())
    return Error::invalid(fmt::format("--token-file {} belongs to uid {}, not to this user (uid {})", path, st.st_uid,
                                      ::geteuid()));
  if ((st.st_mode & 077) != 0)
    return Error::invalid(fmt::format("--token-file {} is accessible to group or others (mode {:04o}); the token is a "
                                      "secret: chmod 600 {}",
                                      path, st.st_mode & 07777, path));
  std::string token;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::sys("--token-file: cannot read " + path);
    if (n == 0) break;
    token.append(buf, static_cast<std::size_t>(n));
    if (token.size() > 4096) return Error::invalid("--token-file " + path + " is larger than 4096 bytes: not a token");
  }
  if (!token.empty() && token.back() == '\n') token.pop_back();
  if (!token.empty() && token.back() == '\r') token.pop_back();
  if (token.empty()) return Error::invalid("--token-file " + path + " is empty");
  for (char ch : token)
    if (static_cast<unsigned char>(ch) <= ' ' || static_cast<unsigned char>(ch) >= 0x7f)
      return Error::invalid("--token-file " + path +
                            " holds spaces, control or non-ASCII characters: a token is one line of printable ASCII");
  return token;
}

}  // namespace uexec::web
