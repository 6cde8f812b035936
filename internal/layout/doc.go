// Package layout holds one test: README.md's map of the repository names
// every Go package, and nothing that is not there, so the map a newcomer
// reads first cannot drift from the tree.
package layout
