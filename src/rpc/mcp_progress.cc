#include "rpc/mcp_progress.h"

#include "session/utf8_cut.h"

namespace uexec::rpc {

std::string ProgressReporter::newest_line(std::string_view text) {
  std::size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string_view::npos) return {};
  text = text.substr(0, end + 1);
  std::size_t start = text.find_last_of('\n');
  std::string_view line = start == std::string_view::npos ? text : text.substr(start + 1);
  if (line.size() > kMaxMessageBytes) line = line.substr(session::cut_forward(line, line.size() - kMaxMessageBytes));
  return session::lossy_decode(line);
}

std::optional<nlohmann::json> ProgressReporter::on_output(std::string_view delta, Clock::time_point now) {
  if (std::string line = newest_line(delta); !line.empty()) line_ = std::move(line);
  if (line_.empty() || (last_sent_ && now - *last_sent_ < kInterval)) return std::nullopt;
  last_sent_ = now;
  nlohmann::json params = {{"progressToken", token_}, {"progress", ++sent_}, {"message", std::move(line_)}};
  line_.clear();
  return params;
}

}  // namespace uexec::rpc
