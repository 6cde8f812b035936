// Package lockcmd is `tenure lock`: run a command while holding a lock (or a
// semaphore slot) and stop it within one session TTL of losing it.
//
// It follows `consul lock`: key <prefix>/.lock with api.LockFlagValue for
// -n 1 (so it excludes, and is excluded by, `consul lock` on the same
// prefix), api.Semaphore's layout for -n > 1, CONSUL_LOCK_HELD=true in the
// child's environment, SIGTERM then SIGKILL after a grace period. It differs
// where consul lock is weak (SPEC S50): loss is detected by a consistent
// blocking query on the key and by renewals timed on the clock, so the child
// is signalled within one TTL of the last successful renewal even when the
// agent is unreachable (consul lock: ~90s, #9788); and the child learns its
// sequencer (TENURE_LOCK_KEY, TENURE_LOCK_INDEX, TENURE_LOCK_SESSION,
// TENURE_LOCK_MODIFY_INDEX, and TENURE_LOCK_ADMIT_INDEX for a semaphore) so
// it can fence its writes (recipe.SequencerFromEnv, Client.Fence).
//
// Exit status: 0 when the child ran to its end holding the lock; 1 on a
// usage or connection error, when the lock was not acquired (-timeout or
// interrupt), when the lock was lost or the command interrupted (the child
// was signalled), or when release failed; 2 with -child-exit-code when the
// child exited non-zero on its own. consul lock exits 0 after a loss or an
// interrupt; tenure lock exits 1 so a script can tell its child was cut short.
package lockcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/tenurekv/tenure/recipe"
)

// EnvAdmitIndex carries a semaphore slot's .lock ModifyIndex at admission.
const EnvAdmitIndex = "TENURE_LOCK_ADMIT_INDEX"

// DefaultKillGrace is consul lock's pause between SIGTERM and SIGKILL.
const DefaultKillGrace = 5 * time.Second

const usage = `Usage: tenure lock [options] prefix child...

  Acquires a lock (key <prefix>/.lock) or, with -n > 1, a semaphore slot
  under prefix, then runs child. If the lock is lost the child gets SIGTERM,
  then SIGKILL after -kill-grace. The child's environment carries
  CONSUL_LOCK_HELD=true and its sequencer in TENURE_LOCK_KEY,
  TENURE_LOCK_INDEX, TENURE_LOCK_SESSION and TENURE_LOCK_MODIFY_INDEX
  (semaphore: also TENURE_LOCK_ADMIT_INDEX).

  Exit status: 0 child finished; 1 error, not acquired, lock lost or
  interrupted; 2 child failed (with -child-exit-code).

Options:
`

// LockMain runs `tenure lock` with args (after the subcommand name) and
// returns the exit status. SIGINT and SIGTERM stop the child and release.
func LockMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, stdout, stderr)
}

type options struct {
	limit      int
	timeout    time.Duration
	ttl        time.Duration
	lockDelay  time.Duration
	name       string
	httpAddr   string
	shell      bool
	passStdin  bool
	childCode  bool
	killGrace  time.Duration
	verbose    bool
	prefix     string
	child      []string
	lockConfig *api.Config
	// token and tokenFile are consul lock's ACL flags; empty ones leave
	// what api.DefaultConfig read from CONSUL_HTTP_TOKEN and
	// CONSUL_HTTP_TOKEN_FILE. api.NewClient ranks them as Consul's CLI
	// does: -token-file, -token, CONSUL_HTTP_TOKEN_FILE, CONSUL_HTTP_TOKEN.
	token, tokenFile string
	// tls are consul lock's HTTPS flags; empty ones leave what
	// api.DefaultConfig read from CONSUL_CACERT, CONSUL_CAPATH,
	// CONSUL_CLIENT_CERT, CONSUL_CLIENT_KEY and CONSUL_TLS_SERVER_NAME.
	tls api.TLSConfig
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("tenure lock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.IntVar(&o.limit, "n", 1, "number of holders; above 1 a semaphore is used")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up acquiring after this long (0 waits for ever)")
	fs.DurationVar(&o.ttl, "ttl", recipe.DefaultSessionTTL, "session TTL (the server's floor is 10s); the child is signalled within one TTL of losing contact")
	fs.DurationVar(&o.lockDelay, "lock-delay", 15*time.Second, "session lock-delay (0 for none)")
	fs.StringVar(&o.name, "name", "", "session name (default derived from the command)")
	fs.StringVar(&o.httpAddr, "http-addr", "", "agent address, https:// for HTTPS (default CONSUL_HTTP_ADDR, else 127.0.0.1:8500)")
	fs.StringVar(&o.token, "token", "", "ACL token for every request (default CONSUL_HTTP_TOKEN, else the agent's default token)")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the ACL token; wins over -token (default CONSUL_HTTP_TOKEN_FILE)")
	fs.StringVar(&o.tls.CAFile, "ca-file", "", "CA certificate file for HTTPS (default CONSUL_CACERT)")
	fs.StringVar(&o.tls.CAPath, "ca-path", "", "directory of CA certificates for HTTPS (default CONSUL_CAPATH)")
	fs.StringVar(&o.tls.CertFile, "client-cert", "", "client certificate file for HTTPS (default CONSUL_CLIENT_CERT)")
	fs.StringVar(&o.tls.KeyFile, "client-key", "", "client key file for HTTPS (default CONSUL_CLIENT_KEY)")
	fs.StringVar(&o.tls.Address, "tls-server-name", "", "name to check the agent's certificate for (default CONSUL_TLS_SERVER_NAME)")
	fs.BoolVar(&o.shell, "shell", true, "run the command through $SHELL -c (default /bin/sh)")
	fs.BoolVar(&o.passStdin, "pass-stdin", false, "give the child this process's stdin")
	fs.BoolVar(&o.childCode, "child-exit-code", false, "exit 2 if the child exits non-zero")
	fs.DurationVar(&o.killGrace, "kill-grace", DefaultKillGrace, "time between SIGTERM and SIGKILL")
	fs.BoolVar(&o.verbose, "verbose", false, "report progress on stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	rest := fs.Args()
	switch {
	case o.limit <= 0:
		return nil, errors.New("lock holder limit must be positive")
	case len(rest) < 2:
		return nil, errors.New("key prefix and child command must be specified")
	case o.timeout < 0:
		return nil, errors.New("timeout must not be negative")
	case o.ttl <= 0:
		return nil, errors.New("ttl must be positive")
	case o.lockDelay < 0:
		return nil, errors.New("lock-delay must not be negative")
	case o.killGrace < 0:
		return nil, errors.New("kill-grace must not be negative")
	}
	o.prefix = strings.Trim(rest[0], "/")
	if o.prefix == "" {
		return nil, errors.New("key prefix is empty")
	}
	o.child = rest[1:]
	if o.name == "" {
		o.name = fmt.Sprintf("tenure lock for '%s' at '%s'", strings.Join(o.child, " "), o.prefix)
	}
	// api.DefaultConfig reads Consul's environment, HTTPS included
	// (CONSUL_HTTP_ADDR=https://…, CONSUL_HTTP_SSL, CONSUL_CACERT, …);
	// the flags win, as in consul lock.
	o.lockConfig = api.DefaultConfig()
	if o.httpAddr != "" {
		o.lockConfig.Address = o.httpAddr
	}
	t := &o.lockConfig.TLSConfig
	for _, f := range []struct{ flag, dst *string }{{&o.token, &o.lockConfig.Token}, {&o.tokenFile, &o.lockConfig.TokenFile}, {&o.tls.CAFile, &t.CAFile}, {&o.tls.CAPath, &t.CAPath},
		{&o.tls.CertFile, &t.CertFile}, {&o.tls.KeyFile, &t.KeyFile}, {&o.tls.Address, &t.Address}} {
		if *f.flag != "" {
			*f.dst = *f.flag
		}
	}
	return o, nil
}

// held is what Run needs of a Hold or a Slot.
type held interface {
	Lost() <-chan struct{}
	Err() error
	Release(context.Context) error
}

// Run is LockMain with the caller's context: cancelling ctx acts like an
// interrupt.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "tenure lock: %v\n", err)
		}
		return 1
	}
	say := func(format string, a ...any) {
		if o.verbose {
			fmt.Fprintf(stderr, "tenure lock: "+format+"\n", a...)
		}
	}
	c, err := recipe.NewClient(o.lockConfig)
	if err != nil {
		fmt.Fprintf(stderr, "tenure lock: %v\n", err)
		return 1
	}
	sess := recipe.SessionOptions{Name: o.name, TTL: o.ttl, LockDelay: o.lockDelay}
	if o.lockDelay == 0 {
		sess.LockDelay = recipe.NoLockDelay
	}

	actx, cancel := ctx, context.CancelFunc(func() {})
	if o.timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, o.timeout)
	}
	h, env, cleanup, err := acquire(actx, c, o, sess)
	// Read whether the wait ran out before cancel marks it ended either way:
	// a refused acquire within -timeout is a failure, not a timeout.
	timedOut := actx.Err() != nil
	cancel()
	if err != nil {
		if timedOut {
			fmt.Fprintln(stderr, "tenure lock: shutdown triggered or timeout during lock acquisition")
		} else {
			fmt.Fprintf(stderr, "tenure lock: lock acquisition failed: %v\n", err)
		}
		return 1
	}
	say("lock held: %s", strings.Join(env, " "))

	env = append(env, "CONSUL_LOCK_HELD=true")
	if o.httpAddr != "" {
		env = append(env, "CONSUL_HTTP_ADDR="+o.httpAddr)
	}
	// So are its HTTPS and its ACL token: the flags given become the
	// child's environment.
	for _, f := range []struct{ name, v string }{{"CONSUL_HTTP_TOKEN", o.token}, {"CONSUL_HTTP_TOKEN_FILE", o.tokenFile}, {"CONSUL_CACERT", o.tls.CAFile}, {"CONSUL_CAPATH", o.tls.CAPath},
		{"CONSUL_CLIENT_CERT", o.tls.CertFile}, {"CONSUL_CLIENT_KEY", o.tls.KeyFile}, {"CONSUL_TLS_SERVER_NAME", o.tls.Address}} {
		if f.v != "" {
			env = append(env, f.name+"="+f.v)
		}
	}
	status := 0
	ch, err := startChild(o, env, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tenure lock: %v\n", err)
		status = 1
	} else {
		select {
		case err := <-ch.done:
			say("child exited: %v", err)
			if err != nil && o.childCode {
				status = 2
			}
		case <-h.Lost():
			fmt.Fprintf(stderr, "tenure lock: lock lost (%v), terminating child\n", h.Err())
			ch.terminate(o.killGrace)
			status = 1
		case <-ctx.Done():
			fmt.Fprintln(stderr, "tenure lock: interrupted, terminating child")
			ch.terminate(o.killGrace)
			status = 1
		}
	}

	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer rcancel()
	if err := h.Release(rctx); err != nil {
		fmt.Fprintf(stderr, "tenure lock: lock release failed: %v\n", err)
		return 1
	}
	if err := cleanup(rctx); err != nil && !errors.Is(err, recipe.ErrInUse) {
		fmt.Fprintf(stderr, "tenure lock: lock cleanup failed: %v\n", err)
		return 1
	}
	return status
}

// acquire takes the lock or a semaphore slot and returns it, the child's
// sequencer environment, and the cleanup to run after release.
func acquire(ctx context.Context, c *recipe.Client, o *options, sess recipe.SessionOptions) (held, []string, func(context.Context) error, error) {
	if o.limit == 1 {
		l, err := c.Lock(recipe.LockOptions{
			Key: o.prefix + "/" + recipe.SemaphoreKey, Flags: api.LockFlagValue, StrictFlags: true, Session: sess,
		})
		if err != nil {
			return nil, nil, nil, err
		}
		h, err := l.Acquire(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		return h, h.Sequencer().Env(), l.Cleanup, nil
	}
	s, err := c.Semaphore(recipe.SemaphoreOptions{Prefix: o.prefix, Limit: o.limit, Session: sess})
	if err != nil {
		return nil, nil, nil, err
	}
	slot, err := s.Acquire(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	env := append(slot.Sequencer().Env(), EnvAdmitIndex+"="+strconv.FormatUint(slot.AdmitIndex(), 10))
	return slot, env, s.Cleanup, nil
}
