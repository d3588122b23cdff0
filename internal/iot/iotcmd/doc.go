// Package iotcmd is `continuum iot`: the IoT device/gateway/adaptor emulator of seeds/001.
package iotcmd
