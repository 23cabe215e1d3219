use super::*;

#[test]
fn task_count_difference_follows_the_kernels_normalisation() {
    // Equal core counts: the plain difference, never negative.
    assert_eq!(task_count_difference(4, 4, 3, 1), 2);
    assert_eq!(task_count_difference(4, 4, 2, 1), 1);
    assert_eq!(task_count_difference(4, 4, 1, 3), 0);
    // 4 busiest cores with 3 tasks against 2 local cores with 1 task:
    // (2 * (2 * 3 - 4 * 1) + 2 + 4) / 6 = 10 / 6 = 1.
    assert_eq!(task_count_difference(4, 2, 3, 1), 1);
    // An empty local group facing two tasks is offered 2 even where the per-core
    // difference rounds to 1: (2 * (1 * 2 - 4 * 0) + 5) / 5 = 9 / 5 = 1 -> 2.
    assert_eq!(task_count_difference(4, 1, 2, 0), 2);
    // ... but not facing a single task.
    assert_eq!(task_count_difference(4, 1, 1, 0), 1);
}
