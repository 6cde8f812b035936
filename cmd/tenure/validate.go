package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

const validateUsage = `usage: tenure validate [-quiet] [-config-format hcl|json] FILE_OR_DIRECTORY...

Reads the configuration files and directories as "tenure agent" would read
them with -config-file and -config-dir, and checks the result as the agent
does before it starts, without starting it. Exits 0 when the configuration
is valid, 1 when it is not.
`

// runValidate is Consul's `consul validate`: same arguments, messages and
// exit codes, so scripts that vet a config before a restart work unchanged.
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tenure validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, validateUsage)
		fs.PrintDefaults()
	}
	quiet := fs.Bool("quiet", false, "print nothing when the configuration is valid")
	format := fs.String("config-format", "", "read files in this format (hcl or json) whatever their extension")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 1
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "Must specify at least one config file or directory")
		return 1
	}
	warn := func(w string) {
		if !*quiet { // Consul's -quiet silences the warnings too
			fmt.Fprintln(stderr, w)
		}
	}
	s, err := loadConfigFiles(defaultSettings(), fs.Args(), *format, warn)
	if err == nil {
		err = s.validate(warn)
	}
	if err == nil {
		_, err = s.configDefinitions()
	}
	if err != nil {
		fmt.Fprintf(stderr, "Config validation failed: %v\n", err)
		return 1
	}
	if !*quiet {
		fmt.Fprintln(stdout, "Configuration is valid!")
	}
	return 0
}
