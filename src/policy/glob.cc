#include "policy/glob.h"

#include <fnmatch.h>

#include <algorithm>

#include "policy/paths.h"

namespace uexec::policy {

namespace {

// Does the pattern's component list match the path's? A `**` component matches zero or
// more path components, any other one matches exactly one by fnmatch(3) (flags 0).
// m(pi, si), "pat[pi..] matches path[si..]", by dynamic programming over pi descending,
// one row of S+1 booleans at a time: O(P·S) steps and at most one fnmatch per pair, where
// trying every split of each `**` in turn was exponential in their number.
bool match_parts(const std::vector<std::string_view>& pat, const std::vector<std::string_view>& path) {
  const std::size_t S = path.size();
  std::vector<char> next(S + 1, 0), cur(S + 1, 0);  // m(pi + 1, ·) and m(pi, ·)
  next[S] = 1;                                       // m(P, si): only the empty rest matches
  std::string p, s;
  for (std::size_t pi = pat.size(); pi-- > 0;) {
    if (pat[pi] == "**") {
      cur[S] = next[S];
      for (std::size_t si = S; si-- > 0;) cur[si] = next[si] || cur[si + 1];
    } else {
      cur[S] = 0;
      p.assign(pat[pi]);
      for (std::size_t si = 0; si < S; ++si) {
        cur[si] = 0;
        if (!next[si + 1]) continue;  // the rest cannot match: fnmatch need not run
        s.assign(path[si]);
        cur[si] = ::fnmatch(p.c_str(), s.c_str(), 0) == 0;
      }
    }
    std::swap(next, cur);
  }
  return next[0] != 0;
}

}  // namespace

namespace {

// Adds `pi` and, while it sits on a `**` (which may match no component), the positions after it.
void nfa_close(const std::vector<std::string_view>& pat, std::size_t pi, NfaState& out) {
  for (;; ++pi) {
    if (std::find(out.begin(), out.end(), pi) == out.end()) out.push_back(pi);
    if (pi >= pat.size() || pat[pi] != "**") break;
  }
}

}  // namespace

NfaState nfa_start(const std::vector<std::string_view>& pat) {
  NfaState s;
  nfa_close(pat, 0, s);
  std::sort(s.begin(), s.end());
  return s;
}

// The state after one more path component `name`.
NfaState nfa_step(const std::vector<std::string_view>& pat, const NfaState& from, const std::string& name) {
  NfaState next;
  std::string p;
  for (std::size_t pi : from) {
    if (pi >= pat.size()) continue;
    if (pat[pi] == "**") {
      nfa_close(pat, pi, next);  // `**` takes the component and may take more
      continue;
    }
    p.assign(pat[pi]);
    if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) nfa_close(pat, pi + 1, next);
  }
  std::sort(next.begin(), next.end());
  return next;
}

bool nfa_accepts(const std::vector<std::string_view>& pat, const NfaState& s) {
  return !s.empty() && s.back() == pat.size();
}
bool nfa_alive(const std::vector<std::string_view>& pat, const NfaState& s) {
  return !s.empty() && s.front() < pat.size();
}

bool glob_match(std::string_view pattern, std::string_view path) noexcept {
  try {
    return match_parts(path_components(pattern), path_components(path));
  } catch (...) {
    return false;
  }
}

bool glob_may_match_below(std::string_view pattern, std::string_view dir) noexcept {
  try {
    auto pat = path_components(pattern), path = path_components(dir);
    std::string p, s;
    for (std::size_t i = 0; i < path.size(); ++i) {
      if (i >= pat.size()) return false;   // `dir` is deeper than any match
      if (pat[i] == "**") return true;     // any depth below may match the rest
      p.assign(pat[i]);
      s.assign(path[i]);
      if (::fnmatch(p.c_str(), s.c_str(), 0) != 0) return false;
    }
    return pat.size() > path.size();  // components left for an entry below `dir`
  } catch (...) {
    return true;  // out of memory: watching too much is the safe side
  }
}

}  // namespace uexec::policy
