#!/bin/bash
# CiGri's povray demo job, as its examples fetch it from iRods: renders frame $2 of job $1 (a text stands for
# the image) and stores it in the campaign's results collection, which the prologue made.
set -e
name=$1 frame=$2
results="$HOME/irods/povray_results/$CIGRI_CAMPAIGN_ID"
[[ -d $results ]] || { echo "no collection $results: did the prologue run?" >&2; exit 1; }
echo "$name: frame $frame rendered in $PWD" > "$name.png"
cp "$name.png" "$results/"
