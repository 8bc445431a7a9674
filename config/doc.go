// Package config reads lite-agent's TOML configuration files and merges
// them: the user's file ($XDG_CONFIG_HOME/lite-agent/config.toml, default
// ~/.config/lite-agent/config.toml), then the project's
// (.lite-agent/config.toml, the nearest one from the workdir up to the
// repository root), then the command line. A later level overrides an
// earlier one value by value; permission rules and MCP servers are
// gathered from every level. Every merged value remembers where it came
// from, so a user can see why it holds.
//
// A file that does not parse, names a key this version does not know, or
// gives a value of the wrong type is an error naming the file, the line
// and the key. Nothing here writes, except SaveRule, which adds one
// permission rule to a project file.
package config
