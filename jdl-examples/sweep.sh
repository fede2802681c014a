#!/bin/sh
# One job of the example sweep: $1 is the job's name, $2 and $3 its parameters.
name=$1 a=$2 b=$3
result=$(awk -v a="$a" -v b="$b" 'BEGIN { s = 0; for (i = 1; i <= 20000; i++) s += sin(a * i) * cos(b * i) / i; printf "%.6f", s }')
echo "$name a=$a b=$b result=$result" > "$name.txt"
echo "$name: $result"
