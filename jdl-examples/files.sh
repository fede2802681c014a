#!/bin/sh
# One job of the files example: counts the lines of its chunk and of the shared words file.
name=$1 chunk=$2
echo "$name $(cat "$CIGRI_INPUT_DIR/chunk_$chunk.txt" "$CIGRI_INPUT_DIR/words.txt" | wc -l)" > "count_$name.txt"
