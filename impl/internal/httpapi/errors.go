package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tenurekv/tenure/impl/internal/server"
	"github.com/tenurekv/tenure/model"
)

// noLeader is Consul's text for "no leader known" (structs.ErrNoLeader).
const noLeader = "No cluster leader"

// apiError is any answer other than success: a status and a one-line reason.
type apiError struct {
	status int
	msg    string
	allow  []string // the Allow header of a 405
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// writeError answers err as plain text. Anything that is not an *apiError is
// an internal failure and answers 500 with its text, as Consul does.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = &apiError{status: http.StatusInternalServerError, msg: err.Error()}
	}
	h := w.Header()
	if ae.msg != "" {
		// A bare status has no type, as Go's server (and so Consul) sends it.
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	if len(ae.allow) > 0 {
		h.Set("Allow", strings.Join(ae.allow, ","))
	}
	w.WriteHeader(ae.status)
	// One line only: reasons may quote user input containing newlines.
	_, _ = io.WriteString(w, strings.NewReplacer("\r", " ", "\n", " ").Replace(ae.msg))
}

// rejection maps a command the model refused to a status (S8, S39):
// caller mistakes 400 (500 in the compat profile, as Consul), limits 413,
// a broken calling contract 500.
func (h *handler) rejection(err *model.Error) *apiError {
	status := http.StatusInternalServerError
	switch err.Kind {
	case model.ErrInvalid, model.ErrMissing, model.ErrConflict:
		if !h.opts.Compat {
			status = http.StatusBadRequest
		}
	case model.ErrTooLarge:
		status = http.StatusRequestEntityTooLarge
	}
	return &apiError{status: status, msg: err.Msg}
}

// applyFailure maps an error returned by Backend.Apply or Renew itself
// (not a rejection carried in the Result).
func (h *handler) applyFailure(err error) error {
	var me *model.Error
	switch {
	case errors.As(err, &me):
		return h.rejection(me)
	case errors.Is(err, server.ErrNotLeader):
		// Leadership moved while the request was in flight; clients retry 500s.
		return errorf(http.StatusInternalServerError, "%s", noLeader)
	}
	return errorf(http.StatusInternalServerError, "%v", err)
}

// badNumber answers a query parameter that is not an unsigned 64-bit number
// (S39): 400 with a reason, or Consul's 500 with the strconv text in compat.
func (h *handler) badNumber(name, value string, err error) error {
	if h.opts.Compat {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	return errorf(http.StatusBadRequest, "Invalid %s %q: want an unsigned 64-bit integer", name, value)
}
