package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// envPrefix starts the environment variable of every flag: --revisit-min
// is COCRAWL_REVISIT_MIN.
const envPrefix = "COCRAWL_"

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// layerSettings fills the flags the command line left unset, first from
// the environment and then from the TOML file named by --config (or
// COCRAWL_CONFIG), so the order of precedence is flags, environment, file,
// defaults. TOML keys are flag names with "_" for "-"; a table such as
// [crawl] groups keys and its name is not part of them. Lists (seed, peer,
// ...) are TOML arrays, or space-separated in the environment.
func layerSettings(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok {
			return
		}
		if err = setFlag(fs, f, v, true); err != nil {
			err = usagef("%s=%q: %v", envName(f.Name), v, err)
			return
		}
		set[f.Name] = true
	})
	if err != nil {
		return err
	}
	cf := fs.Lookup("config")
	if cf == nil || cf.Value.String() == "" {
		return nil
	}
	path := cf.Value.String()
	values, err := readConfigFile(path)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, key := range names {
		name := strings.ReplaceAll(key, "_", "-")
		f := fs.Lookup(name)
		if f == nil || name == "config" {
			return usagef("config %s: unknown setting %q for 'cocrawl %s'", path, key, fs.Name())
		}
		if set[name] {
			continue
		}
		for _, v := range values[key] {
			if err := setFlag(fs, f, v, false); err != nil {
				return usagef("config %s: %s = %q: %v", path, key, v, err)
			}
		}
	}
	return nil
}

// readConfigFile returns every setting of a TOML file as strings, lists as
// several, tables flattened one level.
func readConfigFile(path string) (map[string][]string, error) {
	var raw map[string]any
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return nil, usagef("config %s: %v", path, err)
	}
	out := map[string][]string{}
	var add func(key string, v any, depth int) error
	add = func(key string, v any, depth int) error {
		switch x := v.(type) {
		case map[string]any:
			if depth > 0 {
				return usagef("config %s: table %q is nested too deep", path, key)
			}
			for k, vv := range x {
				if err := add(k, vv, depth+1); err != nil {
					return err
				}
			}
		case []any:
			for _, e := range x {
				out[key] = append(out[key], scalar(e))
			}
			if len(x) == 0 {
				out[key] = []string{}
			}
		default:
			if _, dup := out[key]; dup {
				return usagef("config %s: %q is set twice", path, key)
			}
			out[key] = []string{scalar(x)}
		}
		return nil
	}
	for k, v := range raw {
		if err := add(k, v, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case time.Time:
		return x.Format(time.RFC3339)
	}
	return fmt.Sprint(v)
}

// setFlag sets f to v; a repeatable flag from the environment takes a
// space-separated list.
func setFlag(fs *flag.FlagSet, f *flag.Flag, v string, fromEnv bool) error {
	if _, repeatable := f.Value.(*multiFlag); repeatable && fromEnv {
		for _, item := range strings.Fields(v) {
			if err := fs.Set(f.Name, item); err != nil {
				return err
			}
		}
		return nil
	}
	return fs.Set(f.Name, v)
}
