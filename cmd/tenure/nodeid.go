package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-uuid"
)

// nodeIDFile is where an agent keeps its node ID, as Consul keeps it.
const nodeIDFile = "node-id"

// resolveNodeID settles the node's UUID as Consul's agent does: the one
// -node-id gives, else the one kept in the data dir, else a new random one,
// kept there so that a restarted agent is the same node (S62). Dev mode has
// no data dir and takes a new ID each run. IDs are lowercased, as in Consul.
func (s *settings) resolveNodeID() error {
	if s.NodeID != "" {
		id := strings.ToLower(s.NodeID)
		if _, err := uuid.ParseUUID(id); err != nil {
			return fmt.Errorf("node_id %q is not a UUID: %w", s.NodeID, err)
		}
		s.NodeID = id
		return nil
	}
	if s.Dev || s.DataDir == "" {
		id, err := uuid.GenerateUUID()
		if err != nil {
			return fmt.Errorf("node ID: %w", err)
		}
		s.NodeID = id
		return nil
	}
	path := filepath.Join(s.DataDir, nodeIDFile)
	raw, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.ToLower(strings.TrimSpace(string(raw)))
		if _, err := uuid.ParseUUID(id); err != nil {
			return fmt.Errorf("node ID in %s is not a UUID (fix or remove the file): %w", path, err)
		}
		s.NodeID = id
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("read node ID: %w", err)
	}
	id, err := uuid.GenerateUUID()
	if err != nil {
		return fmt.Errorf("node ID: %w", err)
	}
	if err := writeFileDurably(path, []byte(id)); err != nil {
		return fmt.Errorf("keep node ID: %w", err)
	}
	s.NodeID = id
	return nil
}

// writeFileDurably writes path whole or not at all, and makes the write
// survive a crash: a temporary file, synced, renamed over path, and the
// directory synced.
func writeFileDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename there is nothing left to remove
	if _, err := tmp.Write(data); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Chmod(0o600); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Sync(); err != nil {
		return errors.Join(err, tmp.Close())
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
