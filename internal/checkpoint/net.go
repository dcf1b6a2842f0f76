package checkpoint

// NetChanges lists what run changed in its areas overall: its first
// checkpoint against its last (the end checkpoint, or the last command's
// for a run that did not end cleanly), named with their areas. A path
// changed and changed back is not listed. Nothing is read from the areas.
func NetChanges(dir, run string) ([]AreaChange, error) {
	idx, err := ReadIndex(dir, run)
	if err != nil {
		return nil, err
	}
	first, last := idx[0].Checkpoint, idx[len(idx)-1].Checkpoint
	if first == "" || last == "" || first == last {
		return nil, nil
	}
	return newLoader(dir, idx[0].Areas).diff(first, last)
}
