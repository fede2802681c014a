# CIMENT's environment (/applis/ciment/v2/env.bash on its clusters), as CiGri's example prologues source it,
# for a machine without environment modules nor iRods: `module load` notes what it loads in
# ~/modules-loaded, and the iRods commands the examples use work on the folder ~/irods, which stands for the
# user's iRods zone. Bash (functions with [[ ]]): the prologues that source it run under bash.

IRODS_ZONE="$HOME/irods"

module() {
    if [[ $1 == load ]]; then
        echo "${@:2}" >> "$HOME/modules-loaded"
    fi
}

# imkdir [-p] COLLECTION
imkdir() {
    if [[ $1 == -p ]]; then shift; fi
    mkdir -p "$IRODS_ZONE/$1"
}

secure_imkdir() {
    imkdir "$@"
}

# iget [-r] [-f] COLLECTION: a copy in the current folder
iget() {
    while [[ $1 == -* ]]; do shift; done
    cp -R "$IRODS_ZONE/$1" .
}

# secure_irsync -r i:COLLECTION FOLDER: the collection's files in FOLDER/COLLECTION (the collections the
# examples sync hold files only). As rsync, each file is written beside its place and renamed over it: a job
# of another cluster running the old one (the clusters here share this home) keeps reading it whole, where a
# copy in place would truncate it under the running shell
secure_irsync() {
    if [[ $1 == -r ]]; then shift; fi
    local from="$IRODS_ZONE/${1#i:}" to file name
    to="$2/$(basename "$from")"
    mkdir -p "$to"
    for file in "$from"/*; do
        name=$(basename "$file")
        cp -p "$file" "$to/.$name.part" && mv -f "$to/.$name.part" "$to/$name"
    done
}
