// Package deploy holds no code: its tests check what this directory ships
// to operators. systemd_test.go runs systemd-analyze on the units (verify,
// and the exposure score of their hardening); deb_test.go builds the .deb
// packages with scripts/dist.sh for this machine, installs them with dpkg,
// checks their files, user, units and --version, and purges them again.
// The example configurations are loaded by the binaries' own tests
// (cmd/master, cmd/worker, cmd/berth), the image by deploy/image's.
package deploy
