// flags.cc: the command-line parser (flags.h).
#include "cli/flags.h"

#include <algorithm>
#include <utility>

namespace uexec::cli {

Flags::Flags(Unmatched unmatched, std::string unknown_noun)
    : unmatched_(unmatched), unknown_noun_(std::move(unknown_noun)) {}

Flags& Flags::help() {
  help_ = true;
  return *this;
}

Flags& Flags::double_dash_ends_flags() {
  double_dash_ = true;
  return *this;
}

Flags& Flags::on(std::initializer_list<const char*> names, std::function<void()> set) {
  flags_.push_back({{names.begin(), names.end()}, Flag::Kind::kSwitch, std::move(set), {}, {}, {}});
  return *this;
}

Flags& Flags::value(std::initializer_list<const char*> names, std::function<Verdict(const std::string&)> take,
                    std::function<Verdict()> missing) {
  flags_.push_back({{names.begin(), names.end()}, Flag::Kind::kValue, {}, std::move(take), std::move(missing), {}});
  return *this;
}

Flags& Flags::optional_value(const char* name, std::function<void(std::optional<std::string>)> take) {
  flags_.push_back({{name}, Flag::Kind::kOptionalValue, {}, {}, {}, std::move(take)});
  return *this;
}

const Flags::Flag* Flags::find(const std::string& arg) const {
  for (const auto& f : flags_) {
    for (const auto& n : f.names) {
      if (arg == n) return &f;
      if (f.kind == Flag::Kind::kOptionalValue && arg.rfind(n + "=", 0) == 0) return &f;
    }
  }
  return nullptr;
}

ParsedArgs Flags::parse(const std::vector<std::string>& args) const {
  ParsedArgs out;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (double_dash_ && a == "--") {
      ++i;
      break;
    }
    if (help_ && (a == "-h" || a == "--help")) {
      out.help = true;
      return out;
    }
    const Flag* f = find(a);
    bool has_next = i + 1 < args.size();
    if (f && f->kind == Flag::Kind::kValue && !has_next && !f->missing) f = nullptr;  // counts as unmatched
    if (f) {
      Verdict verdict;
      switch (f->kind) {
        case Flag::Kind::kSwitch:
          f->set();
          break;
        case Flag::Kind::kValue:
          verdict = has_next ? f->take(args[++i]) : f->missing();
          break;
        case Flag::Kind::kOptionalValue: {
          const std::string& name = f->names.front();
          std::optional<std::string> v;
          if (a.size() > name.size() + 1) v = a.substr(name.size() + 1);
          else if (has_next && !args[i + 1].empty() && args[i + 1][0] != '-') v = args[++i];
          f->take_optional(std::move(v));
          break;
        }
      }
      if (!verdict.empty()) {
        out.error = std::move(verdict);
        return out;
      }
      continue;
    }
    bool dashed = !a.empty() && a[0] == '-';
    if (unmatched_ == Unmatched::kRefuse || (unmatched_ == Unmatched::kEndsFlagsUnlessDashed && dashed)) {
      out.error = "unknown " + unknown_noun_ + " " + a;
      return out;
    }
    if (unmatched_ != Unmatched::kCollect) break;
    out.rest.push_back(a);
  }
  out.rest.insert(out.rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return out;
}

std::optional<std::chrono::milliseconds> parse_duration(const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && digits < 10 && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return std::nullopt;
  const long long n = std::stoll(text.substr(0, digits));
  const std::string unit = text.substr(digits);
  long long per;
  if (unit == "ms") per = 1;
  else if (unit.empty() || unit == "s") per = 1000;
  else if (unit == "m") per = 60'000;
  else if (unit == "h") per = 3'600'000;
  else if (unit == "d") per = 86'400'000;
  else return std::nullopt;
  return std::chrono::milliseconds(n * per);  // at most 10 digits: no overflow, even in days
}

}  // namespace uexec::cli
