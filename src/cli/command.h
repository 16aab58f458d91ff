#pragma once
// Subcommands register themselves here, one file each (cmd_inspect.cpp, ...), so
// adding a command needs no edit to main.cpp:
//
//   static void setup(CLI::App& root) {
//     auto* cmd = root.add_subcommand("inspect", "Show a GGUF file's contents");
//     ... options ...
//     cmd->callback([=] { ... });   // throw rayo::Error on failure
//   }
//   RAYO_COMMAND(inspect, 20, setup);
//
// The number orders the commands in --help. A callback reports failure by
// throwing rayo::Error (printed as one line, exit 1) or ExitCode (exit status
// without a message).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace rayo::cli {

struct ExitCode {
  int code;
};

using CommandSetup = void (*)(CLI::App& root);

struct CommandEntry {
  std::string name;
  int order;
  CommandSetup setup;
};

std::vector<CommandEntry>& command_registry();

struct CommandRegistrar {
  CommandRegistrar(const char* name, int order, CommandSetup setup) {
    command_registry().push_back({name, order, setup});
  }
};

}  // namespace rayo::cli

#define RAYO_COMMAND(name, order, setup) \
  static ::rayo::cli::CommandRegistrar rayo_command_registrar_##name(#name, order, setup)
