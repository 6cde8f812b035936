package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// agentSettings reads config files, then flags, and validates the result.
// Warnings (deprecated or ignored settings) go to warn.
func agentSettings(args []string, stderr io.Writer, warn func(string)) (settings, error) {
	p, err := parseAgentArgs(args, stderr)
	if err != nil {
		return settings{}, err
	}
	if p.joinUsed {
		warn("The flag '-join' is deprecated. Use the '-retry-join' flag instead.")
	}
	base, err := loadConfigFiles(defaultSettings(), p.configPaths, p.configFormat, warn)
	if err != nil {
		return settings{}, err
	}
	s := p.apply(base)
	if err := s.validate(warn); err != nil {
		return settings{}, err
	}
	return s, nil
}

func runAgent(args []string, stderr io.Writer) int {
	var warnings []string
	s, err := agentSettings(args, stderr, func(w string) { warnings = append(warnings, w) })
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "tenure agent: %v\n", err)
		return 2
	}
	// An intercept logger, so that GET /v1/agent/monitor can stream the
	// log at a level of its own, as Consul's agent does.
	logger := hclog.NewInterceptLogger(&hclog.LoggerOptions{Name: "tenure", Level: hclog.LevelFromString(s.LogLevel), Output: stderr})
	for _, w := range warnings {
		logger.Warn(w)
	}
	a, err := s.start(logger)
	if err != nil {
		logger.Error("start failed", "error", err)
		return 1
	}
	logger.Info("agent running", "node", s.NodeName, "http", a.HTTPAddr(), "server", s.Server || s.Dev, "dev", s.Dev,
		"serf_lan", a.Members().Local().Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case got := <-sig:
		// Consul's defaults: a server does not leave on a signal, so that
		// it rejoins as itself and its sessions are kept meanwhile; a
		// client leaves gracefully. leave_on_terminate and
		// skip_leave_on_interrupt change that.
		logger.Info("shutting down", "signal", got.String())
		if s.leaveOnSignal(got) {
			if err := a.Members().Leave(); err != nil {
				logger.Warn("leave", "error", err)
			}
		}
	case <-a.Left():
		logger.Info("left the cluster; shutting down")
	}
	signal.Stop(sig)
	if err := a.Shutdown(); err != nil {
		logger.Error("shutdown", "error", err)
		return 1
	}
	return 0
}
