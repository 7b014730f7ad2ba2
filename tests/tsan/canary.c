/* A data race on purpose (tests/tsan/canary.sh): two threads increment a plain int. */
#include <pthread.h>
#include <stdio.h>

static int counter;

static void *bump(void *arg)
{
    for (int i = 0; i < 1000; i++)
        counter++;
    return arg;
}

int main(void)
{
    pthread_t a, b;
    pthread_create(&a, NULL, bump, NULL);
    pthread_create(&b, NULL, bump, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%d\n", counter);
    return 0;
}
