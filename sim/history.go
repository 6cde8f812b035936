package sim

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Record is one thing a process (or the resource it wrote to) said about
// itself: what it did, or what it believed, at a virtual instant. Kind is
// the caller's own word, except for the two kinds Begin and End write.
type Record struct {
	// At is when it was recorded, in virtual time since the processes
	// started (the instants the fault schedule uses).
	At      time.Duration
	Process string
	Kind    string
	// Name is what a Begin or End is about ("leader"); free for other kinds.
	Name  string
	Value any
}

// Kinds of the records Process.Begin and Process.End write.
const (
	KindBegin = "begin"
	KindEnd   = "end"
)

func (r Record) String() string {
	s := fmt.Sprintf("%7.3fs %s %s", r.At.Seconds(), r.Process, r.Kind)
	if r.Name != "" {
		s += " " + r.Name
	}
	if r.Value != nil {
		s += fmt.Sprintf(" %v", r.Value)
	}
	return s
}

// History is everything the processes recorded in one run, in the order
// they recorded it (which is also the order of At).
type History struct {
	Records []Record
	// End is when the run stopped the processes; a span still open then
	// lasts until End.
	End time.Duration
}

// Span is a stretch of virtual time during which a process believed
// something (between its Begin and its End of Name).
type Span struct {
	Process string
	Name    string
	From    time.Duration
	// To is when the process ended it, or History.End if it never did.
	To   time.Duration
	Open bool // never ended (the run stopped first)
}

func (s Span) String() string {
	to := fmt.Sprintf("%.3fs", s.To.Seconds())
	if s.Open {
		to = "end of run"
	}
	return fmt.Sprintf("%s %s from %.3fs to %s", s.Process, s.Name, s.From.Seconds(), to)
}

// Of returns the records of one kind, in order.
func (h History) Of(kind string) []Record {
	var out []Record
	for _, r := range h.Records {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// Spans returns every process's spans of name, ordered by start. A second
// Begin of a name already begun, or an End of one not begun, is ignored: a
// belief is held or not.
func (h History) Spans(name string) []Span {
	var out []Span
	open := map[string]int{} // process → its open span's index in out
	for _, r := range h.Records {
		if r.Name != name {
			continue
		}
		i, isOpen := open[r.Process]
		switch {
		case r.Kind == KindBegin && !isOpen:
			open[r.Process] = len(out)
			out = append(out, Span{Process: r.Process, Name: name, From: r.At, To: h.End, Open: true})
		case r.Kind == KindEnd && isOpen:
			out[i].To, out[i].Open = r.At, false
			delete(open, r.Process)
		}
	}
	slices.SortStableFunc(out, func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	return out
}

// Violation is one property a run broke: one of the run's invariants, or
// one of tenure's own properties (Tenure set; Clauses are the SPEC clauses
// it checks).
type Violation struct {
	Property string
	Tenure   bool
	Clauses  []string
	At       time.Duration
	Msg      string
}

func (v Violation) String() string {
	name := v.Property
	if v.Tenure {
		name = "tenure " + name
		if len(v.Clauses) > 0 {
			name += " (" + strings.Join(v.Clauses, ",") + ")"
		}
	}
	return fmt.Sprintf("%s at %.3fs: %s", name, v.At.Seconds(), v.Msg)
}

// Invariant is a property of a run's History, stated by the user. Check
// returns what broke it (nil: it held); the run fills in each violation's
// Property with Name.
type Invariant struct {
	Name  string
	Check func(h History) []Violation
}

// AtMostOne is the invariant that at no virtual instant do two processes
// both believe name (between their Begin(name) and End(name)): for a lock,
// "at most one process believed it held it". It reports each overlap once,
// at the instant it began.
func AtMostOne(name string) Invariant {
	return Invariant{Name: "at-most-one " + name, Check: func(h History) []Violation {
		var out []Violation
		spans := h.Spans(name)
		for i, a := range spans {
			for _, b := range spans[i+1:] {
				if b.From >= a.To {
					break // sorted by start: no later span overlaps a either
				}
				if b.Process != a.Process {
					out = append(out, Violation{At: b.From, Msg: fmt.Sprintf("%s and %s at once: %s; %s", a.Process, b.Process, a, b)})
				}
			}
		}
		return out
	}}
}
