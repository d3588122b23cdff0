package iot

import (
	"math/rand/v2"
	"strconv"
)

// SensorType is a kind of sensor reading: its unit and physical range. The analytics function
// (python/functions/iot-analytics) validates messages against the same table.
type SensorType struct {
	Name, Unit string
	Min, Max   float64
}

// SensorTypes are the readings devices send, each device one type.
var SensorTypes = []SensorType{
	{"temperature", "°C", -40, 85},
	{"humidity", "%", 0, 100},
	{"pressure", "hPa", 300, 1100},
	{"co2", "ppm", 0, 10000},
	{"light", "lx", 0, 100000},
	{"noise", "dB", 0, 140},
	{"pm25", "µg/m³", 0, 1000},
	{"vibration", "mm/s", 0, 100},
	{"power", "W", 0, 100000},
}

// device is one software IoT device: a sensor of one type whose reading drifts (a bounded
// random walk around a typical value), so aggregates are realistic rather than uniform noise.
type device struct {
	id    string // JSON-escaped already (plain ASCII)
	name  string
	typ   *SensorType
	value float64
	step  float64
}

func newDevice(gateway, index int, rng *rand.Rand) device {
	t := &SensorTypes[index%len(SensorTypes)]
	span := t.Max - t.Min
	// Start in the middle half of the range; drift by up to 0.5% of the range per reading.
	return device{
		id:    "g" + strconv.Itoa(gateway) + "-d" + strconv.Itoa(index),
		name:  t.Name + "-" + strconv.Itoa(index),
		typ:   t,
		value: t.Min + span*(0.25+0.5*rng.Float64()),
		step:  span * 0.005,
	}
}

// next advances the reading.
func (d *device) next(rng *rand.Rand) float64 {
	d.value += d.step * (2*rng.Float64() - 1)
	d.value = min(max(d.value, d.typ.Min), d.typ.Max)
	return d.value
}

// appendMessage appends the seed's message, {"sensor_id","name","type","unit","value"}, as
// JSON. invalid makes it fail validation (a reading outside the type's range), to exercise the
// function's checks.
func appendMessage(b []byte, d *device, v float64, invalid bool) []byte {
	if invalid {
		v = d.typ.Max + 1 + (d.typ.Max-d.typ.Min)*0.5
	}
	b = append(b, `{"sensor_id":"`...)
	b = append(b, d.id...)
	b = append(b, `","name":"`...)
	b = append(b, d.name...)
	b = append(b, `","type":"`...)
	b = append(b, d.typ.Name...)
	b = append(b, `","unit":"`...)
	b = append(b, d.typ.Unit...)
	b = append(b, `","value":`...)
	b = strconv.AppendFloat(b, v, 'f', 2, 64)
	return append(b, '}')
}
