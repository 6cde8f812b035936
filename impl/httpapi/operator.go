package httpapi

import "net/http"

// autopilotConfiguration is GET /v1/operator/autopilot/configuration in
// Consul's shape. tenure has no autopilot: servers join raft as voters and
// leave it only by leave or force-leave (S54), so CleanupDeadServers is
// false; the other fields are Consul's defaults, for tools that read them.
func (h *handler) autopilotConfiguration(c *call) error {
	return writeJSON(c, http.StatusOK, map[string]any{
		"CleanupDeadServers":      false,
		"LastContactThreshold":    "200ms",
		"MaxTrailingLogs":         250,
		"MinQuorum":               0,
		"ServerStabilizationTime": "10s",
		"RedundancyZoneTag":       "",
		"DisableUpgradeMigration": false,
		"UpgradeVersionTag":       "",
		"CreateIndex":             0,
		"ModifyIndex":             0,
	})
}
