// Package layers holds no code, only TestLayers: the check that every
// package of cocrawl imports only the packages docs/architecture.md allows
// it, so a lower layer never comes to depend on an upper one.
package layers
