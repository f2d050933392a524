#include "rpc/base64.h"

namespace uexec::rpc {

namespace {
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}
}  // namespace

void base64_append(std::string& out, std::string_view in) {
  std::size_t start = out.size();
  out.resize(start + (in.size() + 2) / 3 * 4);
  char* o = out.data() + start;
  const auto* b = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t i = 0, n = in.size();
  for (; i + 2 < n; i += 3) {
    unsigned v = (unsigned{b[i]} << 16) | (unsigned{b[i + 1]} << 8) | b[i + 2];
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
    *o++ = kAlphabet[v & 63];
  }
  if (i + 1 == n) {
    unsigned v = unsigned{b[i]} << 16;
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (i + 2 == n) {
    unsigned v = (unsigned{b[i]} << 16) | (unsigned{b[i + 1]} << 8);
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
    *o++ = '=';
  }
}

std::string base64_encode(std::string_view in) {
  std::string out;
  base64_append(out, in);
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (std::size_t i = 0; i < in.size(); i += 4) {
    int a = value_of(in[i]), b = value_of(in[i + 1]);
    bool last = i + 4 == in.size();
    int c = (last && in[i + 2] == '=' && in[i + 3] == '=') ? -2 : value_of(in[i + 2]);
    int d = (last && in[i + 3] == '=') ? -2 : value_of(in[i + 3]);
    if (a < 0 || b < 0 || c == -1 || d == -1 || (c == -2 && d != -2)) return std::nullopt;
    unsigned v = (static_cast<unsigned>(a) << 18) | (static_cast<unsigned>(b) << 12);
    if (c >= 0) v |= static_cast<unsigned>(c) << 6;
    if (d >= 0) v |= static_cast<unsigned>(d);
    out += static_cast<char>((v >> 16) & 0xFF);
    if (c >= 0) out += static_cast<char>((v >> 8) & 0xFF);
    if (d >= 0) out += static_cast<char>(v & 0xFF);
  }
  return out;
}

}  // namespace uexec::rpc
