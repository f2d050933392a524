// asciicast.cc: asciicast v2 from the ring's chunks and times (asciicast.h).
#include "cli/asciicast.h"

#include <fmt/core.h>

#include <nlohmann/json.hpp>

#include "session/utf8_cut.h"

namespace uexec::cli {

namespace {

// A JSON string as JSON.stringify writes it: nlohmann escapes the same characters the same way
// (\b \t \n \f \r, other controls as \u00xx, the rest of UTF-8 as it is).
std::string json_string(const std::string& valid_utf8) { return nlohmann::json(valid_utf8).dump(); }

}  // namespace

std::string CastWriter::header() const {
  std::string h = fmt::format(R"({{"version": 2, "width": {}, "height": {})", header_.width, header_.height);
  if (header_.timestamp > 0) h += fmt::format(R"(, "timestamp": {})", header_.timestamp);
  if (!header_.command.empty()) h += R"(, "command": )" + json_string(session::lossy_decode(header_.command));
  return h + "}\n";
}

std::string CastWriter::event(std::uint32_t at_ms, const std::string& text) const {
  return fmt::format("[{}.{:03}, \"o\", {}]\n", at_ms / 1000, at_ms % 1000, json_string(text));
}

std::string CastWriter::chunk(std::uint32_t at_ms, std::string_view bytes) {
  last_ms_ = at_ms;
  std::string raw = std::move(carry_);
  carry_.clear();
  if (pipe_) {
    raw.reserve(raw.size() + bytes.size());
    for (char c : bytes) {
      if (c == '\n') raw += '\r';
      raw += c;
    }
  } else {
    raw.append(bytes);
  }
  std::size_t keep = session::incomplete_tail(raw);
  carry_ = raw.substr(raw.size() - keep);
  raw.resize(raw.size() - keep);
  if (raw.empty()) return {};
  return event(at_ms, session::lossy_decode(raw));
}

std::string CastWriter::gap(std::uint32_t at_ms, std::uint64_t bytes) {
  std::string out = finish();
  last_ms_ = at_ms;
  return out + event(at_ms, fmt::format("\r\n[... {} bytes not retained ...]\r\n", bytes));
}

std::string CastWriter::finish() {
  if (carry_.empty()) return {};
  std::string text = session::lossy_decode(carry_);
  carry_.clear();
  return event(last_ms_, text);
}

}  // namespace uexec::cli
