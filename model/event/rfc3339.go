package event

// parseRFC3339 parses an RFC 3339 date-time (section 5.6) into Unix milliseconds, truncating
// any finer fraction. It returns a problem description instead of an error so that the
// caller can attach field and value. It is hand-written because time.Parse allocates and is
// several times slower, and because it pins down exactly which forms are accepted:
// "YYYY-MM-DDTHH:MM:SS", an optional "." and 1 to 9 digits, then "Z" or "+HH:MM"/"-HH:MM";
// "T" and "Z" may be lower case (RFC 3339 allows it); second 60 (leap second) is refused.
func parseRFC3339(s []byte) (ms int64, problem string) {
	const form = "must be an RFC 3339 timestamp like 2026-11-14T10:05:12.345Z"
	if len(s) < len("2006-01-02T15:04:05Z") {
		return 0, form
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range s[i : i+n] {
			if c < '0' || c > '9' {
				return -1
			}
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec := num(11, 2), num(14, 2), num(17, 2)
	if year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || sec < 0 ||
		s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return 0, form
	}
	i := 19
	frac := 0 // milliseconds
	if s[i] == '.' {
		i++
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			if j-i < 3 {
				frac = frac*10 + int(s[j]-'0')
			}
			j++
		}
		digits := j - i
		if digits == 0 || digits > 9 {
			return 0, form + " (1 to 9 fraction digits)"
		}
		for k := digits; k < 3; k++ {
			frac *= 10
		}
		i = j
	}
	offset := 0 // minutes east of UTC
	switch {
	case i == len(s)-1 && (s[i] == 'Z' || s[i] == 'z'):
	case i == len(s)-6 && (s[i] == '+' || s[i] == '-') && s[i+3] == ':':
		oh, om := num(i+1, 2), num(i+4, 2)
		if oh < 0 || om < 0 {
			return 0, form
		}
		if oh > 23 || om > 59 {
			return 0, "has an impossible UTC offset"
		}
		offset = oh*60 + om
		if s[i] == '-' {
			offset = -offset
		}
	default:
		return 0, form + " (with Z or a ±HH:MM offset)"
	}
	if year == 0 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour > 23 || minute > 59 || sec > 59 {
		return 0, "is not a real date and time"
	}
	days := daysFromCivil(year, month, day)
	secs := days*86400 + int64(hour*3600+minute*60+sec) - int64(offset*60)
	return secs*1000 + int64(frac), ""
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date, year >= 1
// (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
