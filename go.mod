module github.com/berth-cluster/berth

go 1.26
