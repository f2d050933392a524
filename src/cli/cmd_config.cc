// cmd_config.cc: `uexec config`: the effective settings of the config file and where each came
// from (user_config.h), as TOML a person can copy into the file.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/user_config.h"
#if UEXEC_HAVE_LWS
#include "web/ws_server.h"
#endif

namespace uexec::cli {

namespace {

constexpr const char* kConfigHelp =
    "usage: uexec config [--path | --sample]\n"
    "  The settings `uexec serve`, `uexec exec-server` and `uexec mcp` start from: each key of\n"
    "  the config file with its effective value and where it came from (the file and line, the\n"
    "  environment, or the default). A flag on those commands' command line overrides its key.\n"
    "  The file is $UEXEC_CONFIG, else $XDG_CONFIG_HOME/uexec/config.toml, else\n"
    "  ~/.config/uexec/config.toml; a missing file means every default.\n"
    "  --path    print the file's path only\n"
    "  --sample  print a commented sample file (every key at its default)\n";

}  // namespace

int cmd_config(const std::vector<std::string>& args) {
  bool path_only = false, sample = false;
  Flags flags(Unmatched::kRefuse);
  flags.help();
  flags.on({"--path"}, [&] { path_only = true; });
  flags.on({"--sample"}, [&] { sample = true; });
  ParsedArgs parsed = flags.parse(args);
  if (parsed.help) {
    std::fputs(kConfigHelp, stdout);
    return 0;
  }
  if (!parsed.ok() || (path_only && sample)) {
    std::fprintf(stderr, "uexec config: %s\n", parsed.ok() ? "--path and --sample exclude each other" : parsed.error.c_str());
    return kExitUsage;
  }
  if (path_only) {
    std::printf("%s\n", user_config_path().c_str());
    return 0;
  }
  if (sample) {
    std::fputs(sample_config().c_str(), stdout);
    return 0;
  }
  auto config = load_user_config_or_say("uexec config");
  if (!config) return kExitUsage;
  UserConfig shown = *config;
#if UEXEC_HAVE_LWS
  // The page a daemon would serve, rather than "" (its origin stays "default").
  if (shown.web_root.empty()) shown.web_root = web::default_web_root();
#endif
  std::vector<ConfigLine> lines = describe(shown);
  std::printf("# uexec's effective settings, from %s; flags override them.\n", user_config_path().c_str());
  std::size_t width = 0;
  for (const auto& line : lines) width = std::max(width, line.key.size() + 3 + line.value.size());
  std::string table;
  for (const auto& line : lines) {
    if (line.table != table) {
      table = line.table;
      std::printf("\n[%s]\n", table.c_str());
    }
    std::string text = line.key + " = " + line.value;
    std::printf("%-*s  # %s\n", static_cast<int>(width), text.c_str(), line.origin.c_str());
  }
  return 0;
}

}  // namespace uexec::cli
