// Package flagconf fills a flag set from a YAML file and environment
// variables, so that every flag is also a config key and a variable.
//
// Precedence, highest first: command-line flags, environment variables,
// the config file, the flags' defaults. The flag --foo-bar is the YAML key
// foo-bar and the variable PREFIX_FOO_BAR.
package flagconf

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// EnvName is the environment variable for a flag: prefix + "_" + the name
// upper-cased with dashes as underscores.
func EnvName(prefix, flagName string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Apply sets every flag of fs that the command line did not set, from the
// environment (environ, as os.Environ returns it) or else from the YAML file
// at path (skipped when path is empty). Call it after fs.Parse. Variables
// with the prefix that name no flag, unknown keys and values a flag refuses
// are errors that name the setting. skip lists flags that are not settings
// (such as the one that names the config file).
func Apply(fs *flag.FlagSet, path string, environ []string, prefix string, skip ...string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, s := range skip {
		set[s] = true
	}
	byEnv := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byEnv[EnvName(prefix, f.Name)] = f })

	var errs []error
	fromEnv := map[string]bool{}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, prefix+"_") {
			continue
		}
		f, known := byEnv[name]
		switch {
		case !known:
			errs = append(errs, fmt.Errorf("environment %s: no such setting", name))
		case set[f.Name]:
		default:
			if err := fs.Set(f.Name, val); err != nil {
				errs = append(errs, fmt.Errorf("environment %s=%q: %w%s", name, val, err, want(f)))
			}
			fromEnv[f.Name] = true
		}
	}
	if path != "" {
		vals, err := readFile(path)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		keys := make([]string, 0, len(vals))
		for k := range vals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if fs.Lookup(k) == nil || k == "config" {
				errs = append(errs, fmt.Errorf("config %s: unknown key %q", path, k))
				continue
			}
			if set[k] || fromEnv[k] {
				continue
			}
			if err := fs.Set(k, vals[k]); err != nil {
				errs = append(errs, fmt.Errorf("config %s: %s: %q: %w%s", path, k, vals[k], err, want(fs.Lookup(k))))
			}
		}
	}
	return errors.Join(errs...)
}

// ListenAddr refuses a TCP listen address that net.Listen could not take,
// naming the flag; empty is allowed (it disables the listener).
func ListenAddr(flag, addr string) error {
	if addr == "" {
		return nil
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("-%s %q: want host:port (port 0 picks a free one)", flag, addr)
	}
	return nil
}

// AtLeast refuses a duration flag set below least, naming the flag; the
// keepalive settings of both commands share the rule.
func AtLeast(flag string, d, least time.Duration) error {
	if d < least {
		return fmt.Errorf("-%s %v: must be at least %v", flag, d, least)
	}
	return nil
}

// want says what a flag of a standard type accepts, for the message of a
// value it refused ("parse error" alone names no range).
func want(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case bool:
		return ": want true or false"
	case time.Duration:
		return ": want a duration such as 250ms, 5s or 1m"
	case int, int64:
		return ": want a whole number"
	case uint, uint64:
		return ": want a whole number, not negative"
	case float64:
		return ": want a number"
	}
	return ""
}

// readFile reads a flat YAML mapping of setting names to scalars or lists of
// scalars (joined with commas, for list-valued flags).
func readFile(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(path, b)
}

func parse(path string, b []byte) (map[string]string, error) {
	var raw map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) { // empty file: no settings
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		s, err := scalar(v)
		if err != nil {
			return nil, fmt.Errorf("config %s: %s: %w", path, k, err)
		}
		out[k] = s
	}
	return out, nil
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(x), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return "", err
			}
			if strings.Contains(s, ",") {
				return "", fmt.Errorf("list item %q contains a comma", s)
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a scalar or a list of scalars, got %T", v)
}
