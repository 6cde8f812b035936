package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
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
	if _, err := s.configDefinitions(); err != nil {
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
	reload := &reloader{args: args, logger: logger}
	s.reload = reload.reload
	a, err := s.start(logger)
	if err != nil {
		logger.Error("start failed", "error", err)
		return 1
	}
	if err := reload.load(a, s); err != nil {
		logger.Error("start failed", "error", err)
		_ = a.Shutdown()
		return 1
	}
	logger.Info("agent running", "node", s.NodeName, "http", a.HTTPAddr(), "server", s.Server || s.Dev, "dev", s.Dev,
		"serf_lan", a.Members().Local().Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	for done := false; !done; {
		select {
		case got := <-sig:
			if got == syscall.SIGHUP {
				// Consul reloads on SIGHUP and runs on whatever the outcome.
				if err := reload.reload(); err != nil {
					logger.Error("reload failed", "error", err)
				}
				continue
			}
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
		done = true
	}
	signal.Stop(sig)
	if err := a.Shutdown(); err != nil {
		logger.Error("shutdown", "error", err)
		return 1
	}
	return 0
}

// reloader re-reads the agent's config files, flags laid over them as at
// start, for PUT /v1/agent/reload and SIGHUP.
type reloader struct {
	args   []string
	logger hclog.InterceptLogger

	mu    sync.Mutex
	agent runningAgent // nil until load
}

// load registers the config files' services and checks of s on a, at
// start.
func (r *reloader) load(a runningAgent, s settings) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.agent = a
	return r.apply(s)
}

func (r *reloader) apply(s settings) error {
	defs, err := s.configDefinitions()
	if err != nil {
		return err
	}
	return r.agent.LoadConfigDefinitions(defs)
}

// reload is Consul's reload as far as tenure has it: a config that does
// not load changes nothing; otherwise the config's services and checks
// are made the new ones and log_level applied. Other settings need a
// restart and are left as they are, as Consul leaves its non-reloadable
// ones.
func (r *reloader) reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.agent == nil {
		return errors.New("agent is starting")
	}
	var warnings []string
	s, err := agentSettings(r.args, io.Discard, func(w string) { warnings = append(warnings, w) })
	if err != nil {
		return err
	}
	for _, w := range warnings {
		r.logger.Warn(w)
	}
	if err := r.apply(s); err != nil {
		return err
	}
	r.logger.SetLevel(hclog.LevelFromString(s.LogLevel))
	return nil
}
