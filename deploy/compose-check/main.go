// compose-check loads a Compose file with compose-go, the loader Docker Compose v2 itself uses:
// interpolation, the Compose Specification JSON schema and the loader's semantic checks.
// It exits 1 with the loader's message on an invalid file; with -json it prints the resolved model.
// Like `docker compose`, it reads the .env beside the file unless -env-file names other files (repeatable).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
)

func main() {
	asJSON := flag.Bool("json", false, "print the resolved project as JSON")
	var envFiles envFileList
	flag.Var(&envFiles, "env-file", "an env file to read instead of the .env beside the compose file")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: compose-check [-json] [-env-file FILE]... docker-compose.yml")
		os.Exit(2)
	}
	opts, err := cli.NewProjectOptions(
		[]string{flag.Arg(0)},
		cli.WithOsEnv,
		cli.WithEnvFiles(envFiles...),
		cli.WithDotEnv,
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *asJSON {
		out, err := project.MarshalJSON()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(string(out))
		return
	}
	fmt.Printf("%s: valid compose project %q with %d services\n", flag.Arg(0), project.Name, len(project.Services))
}

// envFileList collects repeated -env-file flags, as `docker compose --env-file` does.
type envFileList []string

func (l *envFileList) String() string { return strings.Join(*l, ",") }

func (l *envFileList) Set(value string) error {
	*l = append(*l, value)
	return nil
}
