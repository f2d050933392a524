// glob.h: deny-read globs over path components: '*', '?', '[…]' within a component (fnmatch
// rules, flags 0) and '**' for any number of components. Two ways to use one: match a whole
// path (glob_match, glob_may_match_below: the deny-read watcher), or walk a tree one
// component at a time as an NFA whose state is the set of pattern positions reached so far
// (the deny-read scan at launch, deny_scan.h). No allocation failure escapes. Any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace uexec::policy {

// Does `path` match glob `pattern` ('*', '?', '[…]' within a component; '**' any depth)?
bool glob_match(std::string_view pattern, std::string_view path) noexcept;
// Can anything strictly below directory `dir` match `pattern`? ("/a/*/x.pem" below "/a/b": yes;
// below "/c" or "/a/b/x.pem": no; '**' reaches any depth.) The deny-read watcher descends
// only where this holds, so a glob under a missing directory never walks the whole tree.
bool glob_may_match_below(std::string_view pattern, std::string_view dir) noexcept;

// The walk. A state: the sorted pattern positions the components so far can have reached.
using NfaState = std::vector<std::size_t>;
// The state before any component.
NfaState nfa_start(const std::vector<std::string_view>& pat);
// The state after one more path component `name` (empty: nothing at or below can match).
NfaState nfa_step(const std::vector<std::string_view>& pat, const NfaState& from, const std::string& name);
// The components so far match the whole pattern.
bool nfa_accepts(const std::vector<std::string_view>& pat, const NfaState& s);
// Something below can still match.
bool nfa_alive(const std::vector<std::string_view>& pat, const NfaState& s);

}  // namespace uexec::policy
