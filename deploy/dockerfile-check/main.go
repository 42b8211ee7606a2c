// dockerfile-check parses a Dockerfile with BuildKit's own parser and linter (the frontend `docker build`
// uses), there being no Docker engine to build it with. It exits 1 with the parser's message or the lint
// warnings; otherwise it prints, as JSON, each stage with its base image resolved from the global ARGs
// (defaults, or -build-arg KEY=VALUE) and its instructions as written.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/linter"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
)

type stage struct {
	Name         string   `json:"name"`
	From         string   `json:"from"`
	Resolved     string   `json:"resolved"`
	Instructions []string `json:"instructions"`
}

type report struct {
	Args   map[string]string `json:"args"`
	Stages []stage           `json:"stages"`
}

type buildArgs []string

func (b *buildArgs) String() string { return strings.Join(*b, ",") }

func (b *buildArgs) Set(value string) error {
	if !strings.Contains(value, "=") {
		return fmt.Errorf("want KEY=VALUE, got %q", value)
	}
	*b = append(*b, value)
	return nil
}

func main() {
	var overrides buildArgs
	flag.Var(&overrides, "build-arg", "KEY=VALUE for a global ARG, as `docker build --build-arg` (repeatable)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: dockerfile-check [-build-arg KEY=VALUE]... Dockerfile")
		os.Exit(2)
	}
	out, err := check(flag.Arg(0), overrides)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func check(path string, overrides []string) (*report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var problems []string
	for _, w := range res.Warnings {
		problems = append(problems, fmt.Sprintf("%s: %s", path, w.Short))
	}
	lint := linter.New(&linter.Config{Warn: func(rule, _, _, msg string, loc []parser.Range) {
		line := 0
		if len(loc) > 0 {
			line = loc[0].Start.Line
		}
		problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", path, line, rule, msg))
	}})
	stages, metaArgs, err := instructions.Parse(res.AST, lint)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	args, err := globalArgs(metaArgs, overrides)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := &report{Args: args, Stages: []stage{}}
	lex := shell.NewLex(res.EscapeToken)
	for _, s := range stages {
		resolved, _, err := lex.ProcessWord(s.BaseName, envOf(args))
		if err != nil {
			return nil, fmt.Errorf("%s: FROM %s: %w", path, s.BaseName, err)
		}
		st := stage{Name: s.Name, From: s.BaseName, Resolved: resolved, Instructions: []string{}}
		for _, c := range s.Commands {
			if code, ok := c.(fmt.Stringer); ok {
				st.Instructions = append(st.Instructions, code.String())
			}
		}
		out.Stages = append(out.Stages, st)
	}
	return out, nil
}

// globalArgs: the ARGs before the first FROM, each default expanded over the ones above it, then overridden.
func globalArgs(metaArgs []instructions.ArgCommand, overrides []string) (map[string]string, error) {
	args := map[string]string{}
	lex := shell.NewLex('\\')
	given := map[string]string{}
	for _, kv := range overrides {
		k, v, _ := strings.Cut(kv, "=")
		given[k] = v
	}
	for _, cmd := range metaArgs {
		for _, kv := range cmd.Args {
			if v, ok := given[kv.Key]; ok {
				args[kv.Key] = v
				continue
			}
			value := ""
			if kv.Value != nil {
				expanded, _, err := lex.ProcessWord(*kv.Value, envOf(args))
				if err != nil {
					return nil, fmt.Errorf("ARG %s: %w", kv.Key, err)
				}
				value = expanded
			}
			args[kv.Key] = value
		}
	}
	for k := range given {
		if _, ok := args[k]; !ok {
			return nil, fmt.Errorf("-build-arg %s: no such global ARG", k)
		}
	}
	return args, nil
}

func envOf(args map[string]string) shell.EnvGetter {
	pairs := make([]string, 0, len(args))
	for k, v := range args {
		pairs = append(pairs, k+"="+v)
	}
	return shell.EnvsFromSlice(pairs)
}
