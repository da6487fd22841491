//! Mutable borrows of several elements of one slice at once, so that work
//! on distinct elements (a step's changed functions) can go to different
//! threads.

/// `&mut items[i]` for every `i` of `indices`, in the order of `indices`;
/// `None` for an index out of range or repeated (its first occurrence gets
/// the borrow).
pub fn many_mut<'a, T>(items: &'a mut [T], indices: &[usize]) -> Vec<Option<&'a mut T>> {
    let mut order: Vec<usize> = (0..indices.len()).collect();
    // A step's functions come in increasing order (the wire's order):
    // then the walk below needs no sort.
    if !indices.windows(2).all(|w| w[0] < w[1]) {
        order.sort_by_key(|&k| (indices[k], k));
    }
    let mut out: Vec<Option<&'a mut T>> = std::iter::repeat_with(|| None)
        .take(indices.len())
        .collect();
    let mut rest = items;
    let mut base = 0usize;
    for k in order {
        let i = indices[k];
        if i < base || i - base >= rest.len() {
            continue;
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(i - base);
        let Some((item, tail)) = tail.split_first_mut() else {
            break;
        };
        out[k] = Some(item);
        rest = tail;
        base = i + 1;
    }
    out
}

/// The stretches `ranges` of `items` (increasing and disjoint), each as a
/// mutable slice with the index of its first element: a range that
/// overlaps the one before it or runs past the end is cut short (possibly
/// to nothing).
pub fn stretches_mut<T>(
    items: &mut [T],
    ranges: impl Iterator<Item = std::ops::Range<usize>>,
) -> Vec<(&mut [T], usize)> {
    let mut out = Vec::new();
    let mut rest = items;
    let mut base = 0usize;
    for r in ranges {
        let start = r.start.max(base);
        let skip = (start - base).min(rest.len());
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(skip);
        let len = r.end.saturating_sub(start).min(tail.len());
        let (mine, tail) = tail.split_at_mut(len);
        out.push((mine, start));
        rest = tail;
        base = start + len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{many_mut, stretches_mut};

    #[test]
    fn stretches_are_cut_apart_in_order() {
        let mut v: Vec<i32> = (0..10).collect();
        let got: Vec<(Vec<i32>, usize)> =
            stretches_mut(&mut v, [1..3, 3..4, 6..9, 8..12].into_iter())
                .into_iter()
                .map(|(s, b)| (s.to_vec(), b))
                .collect();
        assert_eq!(
            got,
            [
                (vec![1, 2], 1),
                (vec![3], 3),
                (vec![6, 7, 8], 6),
                (vec![9], 9)
            ]
        );
    }

    #[test]
    fn borrows_each_index_once_in_the_given_order() {
        let mut v = vec![10, 11, 12, 13, 14];
        let got = many_mut(&mut v, &[3, 0, 9, 3, 4]);
        let got: Vec<Option<i32>> = got.into_iter().map(|x| x.map(|r| *r)).collect();
        assert_eq!(got, [Some(13), Some(10), None, None, Some(14)]);
        for r in many_mut(&mut v, &[4, 1]).into_iter().flatten() {
            *r += 100;
        }
        assert_eq!(v, [10, 111, 12, 13, 114]);
    }

    #[test]
    fn increasing_indices_borrow_in_one_walk() {
        let mut v = vec![10, 11, 12, 13, 14];
        let got = many_mut(&mut v, &[0, 2, 4, 7]);
        let got: Vec<Option<i32>> = got.into_iter().map(|x| x.map(|r| *r)).collect();
        assert_eq!(got, [Some(10), Some(12), Some(14), None]);
        for r in many_mut(&mut v, &[1, 3]).into_iter().flatten() {
            *r += 100;
        }
        assert_eq!(v, [10, 111, 12, 113, 14]);
        assert!(many_mut(&mut v, &[]).is_empty());
    }
}
