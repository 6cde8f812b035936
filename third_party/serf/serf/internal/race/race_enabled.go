// Copyright IBM Corp. 2013, 2026
// SPDX-License-Identifier: MPL-2.0

//go:build race

package race

const Enabled = true
