package agent

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/impl/internal/pipenet"
	"github.com/tenurekv/tenure/impl/internal/server"
)

// TestKillDoesNotWaitForClients: with a client connected that has sent
// nothing, Shutdown waits its grace for the connection to finish, while
// Kill (the simulator's crash) cuts it at once, as kill -9 would.
func TestKillDoesNotWaitForClients(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(*Agent) error
		took time.Duration
	}{
		{"shutdown", (*Agent).Shutdown, 2 * time.Second},
		{"kill", (*Agent).Kill, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := pipenet.Listen(8500)
				a, err := New(Config{Server: server.Config{NodeName: "dev", Dev: true}, Listener: ln})
				if err != nil {
					t.Fatal(err)
				}
				<-a.Server().Registered()
				idle, err := ln.Dial(context.Background(), "")
				if err != nil {
					t.Fatal(err)
				}
				defer idle.Close()
				synctest.Wait()
				start := time.Now()
				if err := tc.stop(a); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != tc.took {
					t.Fatalf("%s took %v with an idle client connected, want %v", tc.name, took, tc.took)
				}
			})
		})
	}
}
