// Package testfs gives tests a small filesystem of their own to fill: a
// tmpfs mounted in a temporary folder, and a filler file that takes all
// but some of its space (Linux; it needs root, and tests skip without it).
package testfs
