package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/shirou/gopsutil/v4/cpu"
	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/host"
	"github.com/shirou/gopsutil/v4/mem"
)

// hostDiskPath is the file system /v1/agent/host reports on, as Consul's.
const hostDiskPath = "/"

// hostCollectTimeout bounds one collection: each part reads /proc or
// calls statfs, which a hung mount could stall.
const hostCollectTimeout = 10 * time.Second

// hostInfo is GET /v1/agent/host in Consul's shape: the host's memory,
// CPUs, identity and root disk as gopsutil reports them (Consul uses the
// same library, so the fields and their JSON names are its), when they
// were collected (Unix nanoseconds) and what could not be. Consul shows an
// error as an empty object; tenure shows its text.
type hostInfo struct {
	Memory         *mem.VirtualMemoryStat
	CPU            []cpu.InfoStat
	Host           *host.InfoStat
	Disk           *disk.UsageStat
	CollectionTime int64
	Errors         []string
}

// collectHost gathers hostInfo; a part that fails is left null and its
// error listed.
func collectHost(ctx context.Context) hostInfo {
	ctx, cancel := context.WithTimeout(ctx, hostCollectTimeout)
	defer cancel()
	out := hostInfo{CollectionTime: time.Now().UTC().UnixNano()}
	failed := func(err error) { out.Errors = append(out.Errors, err.Error()) }
	if h, err := host.InfoWithContext(ctx); err != nil {
		failed(err)
	} else {
		out.Host = h
	}
	if m, err := mem.VirtualMemoryWithContext(ctx); err != nil {
		failed(err)
	} else {
		out.Memory = m
	}
	if d, err := disk.UsageWithContext(ctx, hostDiskPath); err != nil {
		failed(err)
	} else {
		out.Disk = d
	}
	if c, err := cpu.InfoWithContext(ctx); err != nil {
		failed(err)
	} else {
		out.CPU = c
	}
	return out
}

// agentHost answers GET /v1/agent/host.
func agentHost(c *call) error {
	return writeJSON(c, http.StatusOK, collectHost(c.r.Context()))
}
