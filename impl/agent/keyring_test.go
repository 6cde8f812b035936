package agent_test

import (
	"bytes"
	"encoding/base64"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/tenurekv/tenure/impl/agent"
	"github.com/tenurekv/tenure/impl/agent/agenttest"
)

// TestKeyringThroughConsulAPI: consul/api's keyring calls (what `consul
// keyring` runs) rotate the gossip key of a server and a client agent,
// asked through either.
func TestKeyringThroughConsulAPI(t *testing.T) {
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	b1, b2 := base64.StdEncoding.EncodeToString(k1), base64.StdEncoding.EncodeToString(k2)
	dev := agenttest.StartDevAgent(t, func(cfg *agent.Config) { cfg.Gossip.EncryptKey = k1 })
	client := agenttest.StartClientWith(t, "c1", dev, func(cc *agent.ClientConfig) { cc.Gossip.EncryptKey = k1 })
	// Joined: both are members of the server's pool.
	waitMembers(t, dev, 2)
	op := func(a string) *api.Operator {
		c, err := api.NewClient(&api.Config{Address: a})
		if err != nil {
			t.Fatal(err)
		}
		return c.Operator()
	}
	viaClient, viaServer := op(client.HTTPAddr()), op(dev.HTTPAddr())
	if err := viaClient.KeyringInstall(b2, nil); err != nil {
		t.Fatal(err)
	}
	if err := viaServer.KeyringUse(b2, nil); err != nil {
		t.Fatal(err)
	}
	if err := viaClient.KeyringRemove(b1, nil); err != nil {
		t.Fatal(err)
	}
	list, err := viaServer.KeyringList(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].WAN || list[0].Datacenter != "dc1" || list[0].NumNodes != 2 ||
		len(list[0].Keys) != 1 || list[0].Keys[b2] != 2 || list[0].PrimaryKeys[b2] != 2 {
		t.Fatalf("list %+v", list[0])
	}
	if err := viaServer.KeyringRemove(b2, nil); err == nil {
		t.Fatal("the primary key was removed")
	}
}

func waitMembers(t *testing.T, a *agent.Agent, n int) {
	t.Helper()
	for !membersAlive(a, n) {
		select {
		case <-t.Context().Done():
			t.Fatal("members never joined")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func membersAlive(a *agent.Agent, n int) bool {
	alive := 0
	for _, m := range a.Members().List() {
		if m.SerfStatus == 1 {
			alive++
		}
	}
	return alive >= n
}
