package proccluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// outputTail is how much of a process's output Output returns.
const outputTail = 16 << 10

// stopTimeout bounds how long stop waits after SIGTERM before it kills.
const stopTimeout = 30 * time.Second

// Proc is one started agent process. Its methods may be called from any
// goroutine.
type Proc struct {
	agent Agent // the command line it was started with

	cmd     *exec.Cmd
	logPath string
	mem     *tailBuffer // the output, when there is no log file
	exited  chan struct{}
	waitErr error // the exit status; set before exited closes
}

// Start starts bin with a's command line. Its output is appended to the
// file logPath, so that a restarted agent's log follows its earlier one;
// with logPath "" only its end is kept, in memory. Output returns that end
// either way. The caller ends the process (Kill or stop).
func Start(bin string, a Agent, logPath string) (*Proc, error) {
	p := &Proc{agent: a, logPath: logPath, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, a.args()...)
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("log of agent %s: %w", a.Node, err)
		}
		// The child writes to its own copy of the descriptor, so no
		// goroutine here copies its output (which a benchmark would count).
		defer f.Close()
		p.cmd.Stdout, p.cmd.Stderr = f, f
	} else {
		p.mem = &tailBuffer{max: outputTail}
		p.cmd.Stdout, p.cmd.Stderr = p.mem, p.mem
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agent %s (%s): %w", a.Node, bin, err)
	}
	// One waiter for the process's whole life, so that done can be
	// watched while a Kill or Stop waits too.
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process's id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// done is closed once the process has ended.
func (p *Proc) done() <-chan struct{} { return p.exited }

// Running reports whether the process has not ended yet.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Wait waits until the process ends and returns its exit status as
// exec.Cmd.Wait does.
func (p *Proc) Wait() error {
	<-p.exited
	return p.waitErr
}

// Signal sends sig; a process that has ended already is no error.
func (p *Proc) Signal(sig os.Signal) error {
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal %v to agent %s: %w", sig, p.agent.Node, err)
	}
	return nil
}

// Kill ends the process with SIGKILL, as a crash would: no shutdown code
// runs, and the pool has to find the member failed. A paused process dies
// too. It returns once the process has ended.
func (p *Proc) Kill() error {
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.exited
	return nil
}

// stop sends SIGTERM, on which an agent shuts down gracefully (a client
// agent leaves the pool first), and waits for it to exit: an error if it
// exited uncleanly, or did not exit within stopTimeout (it is killed then).
func (p *Proc) stop() error {
	if err := p.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.Kill()
		return fmt.Errorf("agent %s did not exit within %v of SIGTERM; killed it", p.agent.Node, stopTimeout)
	}
	if p.waitErr != nil {
		return fmt.Errorf("agent %s exited uncleanly after SIGTERM: %w", p.agent.Node, p.waitErr)
	}
	return nil
}

// Pause stops the process with SIGSTOP: it stays a member but answers
// nothing, as a machine that hangs.
func (p *Proc) Pause() error { return p.Signal(syscall.SIGSTOP) }

// resume continues a paused process (SIGCONT).
func (p *Proc) resume() error { return p.Signal(syscall.SIGCONT) }

// Output is the end of the process's output, for failure messages.
func (p *Proc) Output() string {
	if p.mem != nil {
		return p.mem.String()
	}
	s, err := fileTail(p.logPath, outputTail)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	return s
}

// fileTail is the last n bytes of the file at path.
func fileTail(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if _, err := f.Seek(max(st.Size()-n, 0), io.SeekStart); err != nil {
		return "", err
	}
	b, err := io.ReadAll(f)
	return string(b), err
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
