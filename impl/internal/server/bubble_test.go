package server

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenurekv/tenure/model"
)

// TestDevServerInBubble runs a dev server on the system clock inside a
// synctest bubble, as the simulator does: TTL expiry happens on virtual time
// (TTL × 2 after the last renew, never before TTL, S18/S19), and Shutdown
// leaves no goroutine behind — synctest fails the test if one is still
// blocked when the bubble ends.
func TestDevServerInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := NewServer(Config{NodeName: "dev", HTTPAddr: "127.0.0.1:1", Dev: true})
		if err != nil {
			t.Fatal(err)
		}
		<-s.Registered()
		ctx := context.Background()
		res, err := s.Apply(ctx, model.Command{CreateSession: &model.CreateSession{Node: "dev", TTL: "10s"}})
		if err != nil || res.Err != nil {
			t.Fatalf("create: %v %v", err, res.Err)
		}
		id := res.SessionID
		time.Sleep(15 * time.Second)
		if _, err := s.Renew(ctx, id); err != nil {
			t.Fatalf("renew at 15s: %v", err)
		}
		renewed := time.Now()
		time.Sleep(20*time.Second - time.Millisecond)
		synctest.Wait()
		if !s.leader.SessionLive(id) {
			t.Fatal("session expired before TTL × 2 since its renew")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		for s.leader.SessionLive(id) {
			if time.Since(renewed) > 21*time.Second {
				t.Fatal("session outlived TTL × 2 + 1s on a stable leader")
			}
			time.Sleep(time.Millisecond)
		}
		if took := time.Since(renewed); took < 10*time.Second {
			t.Fatalf("expired %v after renew, below the TTL", took)
		}
		if err := s.Shutdown(); err != nil {
			t.Fatal(err)
		}
	})
}
