package simnet

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
)

// fill sets every field reachable from v to a non-zero value, allocating
// slices and pointers, so an aliasing check sees all of them.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 4 {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(7)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("s")
	}
}

// aliases reports the first path where b shares memory with a (same pointer
// or same slice backing array).
func aliases(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		return aliases(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				continue
			}
			if p := aliases(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
				return p
			}
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
		for i := range a.Len() {
			if p := aliases(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

var messages = []any{
	&raft.AppendEntriesRequest{}, &raft.AppendEntriesResponse{},
	&raft.RequestVoteRequest{}, &raft.RequestVoteResponse{},
	&raft.RequestPreVoteRequest{}, &raft.RequestPreVoteResponse{},
	&raft.InstallSnapshotRequest{}, &raft.InstallSnapshotResponse{},
	&raft.TimeoutNowRequest{}, &raft.TimeoutNowResponse{},
}

func checkClone(clone func(any) any) error {
	for _, m := range messages {
		fill(reflect.ValueOf(m), 0)
		c := clone(m)
		if !reflect.DeepEqual(m, c) {
			return fmt.Errorf("%T: clone differs", m)
		}
		if p := aliases(reflect.ValueOf(m), reflect.ValueOf(c), fmt.Sprintf("%T", m)); p != "" {
			return fmt.Errorf("clone shares memory at %s", p)
		}
	}
	return nil
}

func TestCloneMsgIsDeep(t *testing.T) {
	if err := checkClone(cloneMsg); err != nil {
		t.Fatal(err)
	}
}

// TestCloneCheckerCatchesShallowCopy shows the check fails on a shallow copy.
func TestCloneCheckerCatchesShallowCopy(t *testing.T) {
	shallow := func(m any) any {
		if r, ok := m.(*raft.AppendEntriesRequest); ok {
			c := *r
			return &c
		}
		return cloneMsg(m)
	}
	if err := checkClone(shallow); err == nil {
		t.Fatal("shallow AppendEntries copy not detected")
	}
	if err := checkClone(func(m any) any { return m }); err == nil {
		t.Fatal("identity 'clone' not detected")
	}
}
