#include "agent/keys.h"

#include <cctype>

namespace uexec::agent {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}
}  // namespace

const std::vector<std::string>& key_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"enter", "tab", "escape", "backspace", "delete", "up", "down", "left",
                                  "right", "home", "end", "page-up", "page-down"};
    for (char c = 'a'; c <= 'z'; ++c) v.push_back(std::string("ctrl-") + c);
    v.push_back("ctrl-\\");
    v.push_back("ctrl-]");
    return v;
  }();
  return names;
}

std::string canonical_key(std::string_view name) {
  std::string n = lower(name);
  if (n == "esc") return "escape";
  if (n == "pageup") return "page-up";
  if (n == "pagedown") return "page-down";
  if (n == "return") return "enter";
  // C-x, c-x, ^X aliases for ctrl-x.
  if (n.size() == 3 && (n.rfind("c-", 0) == 0)) n = "ctrl-" + n.substr(2);
  if (n.size() == 2 && n[0] == '^') n = "ctrl-" + n.substr(1);
  for (const auto& k : key_names())
    if (k == n) return n;
  return {};
}

std::optional<std::string> key_bytes(std::string_view name, bool tty, bool app_cursor) {
  std::string k = canonical_key(name);
  if (k.empty()) return std::nullopt;
  if (k == "enter") return std::string(tty ? "\r" : "\n");
  if (k == "tab") return std::string("\t");
  if (k == "escape") return std::string("\x1b");
  if (k == "backspace") return std::string("\x7f");
  if (k == "delete") return std::string("\x1b[3~");
  if (k == "page-up") return std::string("\x1b[5~");
  if (k == "page-down") return std::string("\x1b[6~");
  const char* intro = (tty && app_cursor) ? "\x1bO" : "\x1b[";
  if (k == "up") return std::string(intro) + "A";
  if (k == "down") return std::string(intro) + "B";
  if (k == "right") return std::string(intro) + "C";
  if (k == "left") return std::string(intro) + "D";
  if (k == "home") return std::string(intro) + "H";
  if (k == "end") return std::string(intro) + "F";
  if (k == "ctrl-\\") return std::string("\x1c");
  if (k == "ctrl-]") return std::string("\x1d");
  if (k.rfind("ctrl-", 0) == 0 && k.size() == 6) return std::string(1, static_cast<char>(k[5] & 0x1f));
  return std::nullopt;
}

}  // namespace uexec::agent
