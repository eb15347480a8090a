//go:build !unix

package webevents

import "io/fs"

func diskUsage(info fs.FileInfo) int64 { return info.Size() }
