// tool_args.h: what every agent tool does with its arguments before it acts: clamp the
// numbers to their ranges, size the output budget, and refuse with the tool's own words
// (docs/agent.md §2.8: the message is the Error's context, worded like Codex). Pure.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>

#include "base/config.h"
#include "base/result.h"

namespace uexec::agent {

// A refusal or failure of a tool: kInvalidArgument, `text` as the model reads it.
inline base::Error tool_error(std::string text) { return base::Error::invalid(std::move(text)); }

// `v` within [lo, hi]; `lo` wins when the range is empty.
inline long clamp_arg(long v, long lo, long hi) { return std::max(lo, std::min(hi, v)); }

// The bytes a response's body may take: max_output_tokens (default and cap from `cfg`)
// times bytes_per_token.
inline std::size_t output_budget(std::optional<long> max_output_tokens, const base::AgentConfig& cfg) {
  long tokens = clamp_arg(max_output_tokens.value_or(cfg.max_output_tokens), 0, cfg.max_output_tokens_cap);
  return static_cast<std::size_t>(tokens * cfg.bytes_per_token);
}

}  // namespace uexec::agent
