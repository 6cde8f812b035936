package conformance

// S80: services and checks from config files, and reload.

func reloadCases() []Case {
	return []Case{
		{clause: "S80", name: "config-services-registered-and-reloaded",
			unobservable: "needs the agent's config file rewritten between requests; tested against a real agent in cmd/tenure (reload_test.go)"},
	}
}
