/* ctx.c: the goroutine context switch for x86-64 (System V): ~10 ns, no syscall.
 *
 * A saved context is a stack pointer; the stack at it holds, from low to high: the MXCSR and x87
 * control words (8 bytes), r15, r14, r13, r12, rbx, rbp and the return address. Caller-saved
 * registers need no saving: fl_ctx_switch is an ordinary call. A fresh context (fl_ctx_make)
 * "returns" into fl_ctx_trampoline with r12 = arg and r13 = entry, 16-byte aligned at the call.
 * Sanitizer fiber annotations are made by the caller (sched.c), around each switch.
 */
#include "runtime/sched/sched_impl.h"

#if !defined(__x86_64__)
#error "runtime/sched/ctx.c: the context switch is written for x86-64 (System V ABI)"
#endif

__asm__(".text\n"
        ".p2align 4\n"
        ".globl fl_ctx_switch\n"
        ".hidden fl_ctx_switch\n"
        ".type fl_ctx_switch,@function\n"
        "fl_ctx_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size fl_ctx_switch, .-fl_ctx_switch\n"
        ".p2align 4\n"
        ".type fl_ctx_trampoline,@function\n"
        "fl_ctx_trampoline:\n"
        "    movq %r12, %rdi\n"
        "    callq *%r13\n"
        "    ud2\n"
        ".size fl_ctx_trampoline, .-fl_ctx_trampoline\n");

void fl_ctx_trampoline(void);

void *fl_ctx_make(void *stack_top, void (*entry)(void *), void *arg) {
    uintptr_t top = (uintptr_t)stack_top & ~(uintptr_t)15;
    /* the return address sits at top-24, so after `ret` rsp = top-16 (aligned for the call) */
    uint64_t *sp = (uint64_t *)(top - 80);
    uint32_t mxcsr;
    uint16_t fpucw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpucw));
    sp[0] = (uint64_t)mxcsr | ((uint64_t)fpucw << 32);
    sp[1] = 0;                        /* r15 */
    sp[2] = 0;                        /* r14 */
    sp[3] = (uint64_t)(uintptr_t)entry; /* r13 */
    sp[4] = (uint64_t)(uintptr_t)arg; /* r12 */
    sp[5] = 0;                        /* rbx */
    sp[6] = 0;                        /* rbp: ends frame-pointer walks */
    sp[7] = (uint64_t)(uintptr_t)fl_ctx_trampoline;
    return sp;
}
