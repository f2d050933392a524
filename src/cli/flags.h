// flags.h: the command-line parser every `uexec` command uses.
//
// A command declares its flags once: switches (on), flags that take the next argument as their
// value (value), and flags whose value may be glued on with `=` or left out (optional_value).
// What happens to an argument that is none of them is the command's syntax (Unmatched): an
// error (the daemons' flags), the start of the command line to run (`run`, `start`), or a
// positional argument among the flags (`send ID TEXT -n`). `--` can end the flags, and -h /
// --help can stop the parse, where the command says so.
//
// A handler that returns an error text ends the parse with it. Handlers that want every flag
// read before they judge (SandboxFlags, WsListenerFlags) record their own error and return "".
// A value flag without a value either calls its `missing` handler or, without one, counts as
// unmatched (so `uexec kill ID --signal` takes `--signal` as a second ID, as it always did).
#pragma once

#include <chrono>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace uexec::cli {

// A flag's duration: "250ms", "30s", "5m", "2h", "1d" (a bare number is seconds). nullopt
// for anything else, a negative value included.
std::optional<std::chrono::milliseconds> parse_duration(const std::string& text);

// What parse() does with an argument that is none of the declared flags.
enum class Unmatched {
  kRefuse,                   // an error: "unknown <noun> ARG"
  kEndsFlags,                // it and everything after it are the rest
  kEndsFlagsUnlessDashed,    // the same, but one that starts with '-' is an error
  kCollect,                  // it joins the rest, and the parse goes on
};

// What parse() found: the help flag, an error, or the rest of the arguments.
struct ParsedArgs {
  bool help = false;               // a help flag was seen; the parse stopped there
  std::string error;               // what was wrong; the parse stopped there
  std::vector<std::string> rest;   // the arguments that were not flags (see Unmatched)

  bool ok() const { return !help && error.empty(); }
};

class Flags {
 public:
  // An error handler's result: "" to go on, else the text to stop with.
  using Verdict = std::string;

  // `unknown_noun` names an unmatched argument in kRefuse's and kEndsFlagsUnlessDashed's
  // error: "unknown option --x" or "unknown argument --x".
  explicit Flags(Unmatched unmatched, std::string unknown_noun = "option");

  // -h and --help end the parse with ParsedArgs::help.
  Flags& help();
  // `--` ends the flags; it is dropped and what follows it is the rest.
  Flags& double_dash_ends_flags();
  // A switch: `set` runs each time one of `names` appears.
  Flags& on(std::initializer_list<const char*> names, std::function<void()> set);
  // A flag with a value (the next argument, whatever it looks like). Without a next argument
  // `missing` decides; without `missing` the flag counts as an unmatched argument.
  Flags& value(std::initializer_list<const char*> names, std::function<Verdict(const std::string&)> take,
               std::function<Verdict()> missing = nullptr);
  // `name=VALUE`, or `name` then VALUE when the next argument is not empty and not a flag, or
  // just `name` (nullopt).
  Flags& optional_value(const char* name, std::function<void(std::optional<std::string>)> take);

  // Parses `args` (the arguments after the command's name).
  ParsedArgs parse(const std::vector<std::string>& args) const;

 private:
  struct Flag {
    std::vector<std::string> names;
    enum class Kind { kSwitch, kValue, kOptionalValue } kind;
    std::function<void()> set;
    std::function<Verdict(const std::string&)> take;
    std::function<Verdict()> missing;
    std::function<void(std::optional<std::string>)> take_optional;
  };

  const Flag* find(const std::string& arg) const;

  Unmatched unmatched_;
  std::string unknown_noun_;
  bool help_ = false;
  bool double_dash_ = false;
  std::vector<Flag> flags_;
};

}  // namespace uexec::cli
