package conformance

// Suite returns every case of the conformance suite, in clause order.
func Suite() []Case {
	var all []Case
	for _, group := range [][]Case{
		sessionCases(),
		invalidationCases(),
		ttlCases(),
		lockDelayCases(),
		kvCases(),
		sequencerCases(),
		blockingCases(),
		recipeCases(),
		membershipCases(),
		serviceCases(),
		checkCases(),
		serviceFieldCases(),
		queryCases(),
		nodeCases(),
		txnCatalogCases(),
		filterCases(),
		agentOpsCases(),
		transportCases(),
		agentStateCases(),
		clusterCases(),
		reloadCases(),
		aclCases(),
		coordinateCases(),
		aclEnforcementCases(),
	} {
		all = append(all, group...)
	}
	return all
}
